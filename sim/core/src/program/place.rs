//! Where an op sits in a whole model: its layer (an unrolled `while`'s iteration, or a
//! block the file repeats) and its part (attention, MLP, norm, embedding, head), as the
//! StableHLO import tells them. Every `ProgramOp` carries its [`Place`]; nothing in a run
//! depends on it: it names ops for what plans layers alike and reports per layer and
//! part. (A scenario writes places as runs of ops: `scenario::Placed`.)

use serde::{Deserialize, Serialize};

/// A part of a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Part {
    /// Token and position embeddings: the lookups and what combines them.
    Embedding,
    /// Attention: the projections, the scores, the mask, the softmax, the context.
    Attention,
    /// The feed-forward block: its projections and activation.
    Mlp,
    /// A normalisation (layer norm, RMSNorm).
    Norm,
    /// The output head: the projection to the vocabulary.
    Head,
}

impl Part {
    /// Every part, in the order a transformer layer meets them.
    pub const ALL: [Part; 5] = [
        Part::Embedding,
        Part::Norm,
        Part::Attention,
        Part::Mlp,
        Part::Head,
    ];

    /// `"attention"`, `"mlp"`, ... as reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Part::Embedding => "embedding",
            Part::Attention => "attention",
            Part::Mlp => "mlp",
            Part::Norm => "norm",
            Part::Head => "head",
        }
    }
}

/// Where one op sits: its layer and part, each when known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Place {
    /// The layer, from 0.
    pub layer: Option<u32>,
    /// The part of the model.
    pub part: Option<Part>,
}

impl Place {
    /// Whether nothing is known.
    pub fn is_unknown(&self) -> bool {
        self.layer.is_none() && self.part.is_none()
    }
}
