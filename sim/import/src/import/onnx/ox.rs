//! What the ONNX lowering works with: a value at import ([`Val`]: a scenario tensor, a
//! constant, or a broadcast not materialised), the context the node lowerings write
//! declarations and kernel steps into ([`Ox`]: fresh names, constants emitted once,
//! reshapes and transposed weights reused), and why a node cannot be imported ([`Bad`]).

use crate::import::lower::{Decl, Step, Tens};
use crate::import::stablehlo::fold::Konst;
use crate::scenario::Init;
use mnsim_arch::DType;
use mnsim_kernels::{Kernel, UnaryOp};
use std::collections::{BTreeMap, BTreeSet};

/// What an ONNX value is at import.
#[derive(Clone, Debug)]
pub enum Val {
    /// A tensor of the scenario.
    T(Tens),
    /// A constant evaluated at import.
    C(Konst),
    /// `src` broadcast numpy-style (aligned to the trailing axes) to dims `out`.
    B { src: Tens, out: Vec<u64> },
}

impl Val {
    pub fn dims(&self) -> Vec<u64> {
        match self {
            Val::T(t) => t.dims.clone(),
            Val::C(k) => k.dims.clone(),
            Val::B { out, .. } => out.clone(),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Val::T(t) => t.dtype,
            Val::C(k) => k.dtype,
            Val::B { src, .. } => src.dtype,
        }
    }
}

/// The lowering context.
pub(super) struct Ox {
    pub(super) decls: Vec<Decl>,
    pub(super) steps: Vec<Step>,
    pub(super) inputs: Vec<String>,
    names: BTreeSet<String>,
    /// Constants already emitted as DRAM tensors.
    emitted: Vec<(Konst, String)>,
    /// Reshapes already made: (tensor, shape) → the reshaped tensor.
    reshaped: BTreeMap<(String, Vec<u64>), String>,
    /// Weights (initializers read from DRAM) by scenario name: a transpose of one is
    /// the same bytes read in another order, not a kernel.
    pub(super) weights: BTreeSet<String>,
    /// The comment for the next step: the node it starts.
    pub(super) origin: Option<String>,
    /// The model's default-domain opset.
    pub(super) opset: i64,
    /// The next `Random` seed.
    seed: u64,
}

fn clean(s: &str) -> String {
    let c: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let c = c.trim_matches('_').to_string();
    if c.starts_with(|c: char| c.is_ascii_alphabetic()) {
        c
    } else {
        format!("v{c}")
    }
}

impl Ox {
    /// An empty context for a model of default-domain opset `opset`.
    pub(super) fn new(opset: i64) -> Ox {
        Ox {
            decls: Vec::new(),
            steps: Vec::new(),
            inputs: Vec::new(),
            names: BTreeSet::new(),
            emitted: Vec::new(),
            reshaped: BTreeMap::new(),
            weights: BTreeSet::new(),
            origin: None,
            opset,
            seed: 0,
        }
    }

    /// A fresh tensor name from `base`.
    pub(super) fn fresh(&mut self, base: &str) -> String {
        let b = clean(base);
        let mut n = b.clone();
        let mut k = 1;
        while self.names.contains(&n) {
            k += 1;
            n = format!("{b}_{k}");
        }
        self.names.insert(n.clone());
        n
    }

    fn decl(&mut self, name: &str, dtype: DType, dims: &[u64]) -> &mut Decl {
        let d = if dims.is_empty() {
            vec![1]
        } else {
            dims.to_vec()
        };
        self.decls.push(Decl {
            name: name.to_string(),
            dtype,
            minor_to_major: (0..d.len()).rev().collect(),
            dims: d,
            seed: None,
            graph_id: None,
            constant: false,
            init: None,
            dim_names: Vec::new(),
        });
        let i = self.decls.len() - 1;
        &mut self.decls[i]
    }

    /// Declares a computed tensor.
    pub(super) fn declare(&mut self, base: &str, dtype: DType, dims: &[u64]) -> Tens {
        let name = self.fresh(base);
        self.decl(&name, dtype, dims);
        Tens {
            name,
            dtype,
            dims: dims.to_vec(),
        }
    }

    /// Declares a DRAM tensor with seeded random values (a graph input or a weight).
    pub(super) fn declare_input(
        &mut self,
        base: &str,
        dtype: DType,
        dims: &[u64],
        dim_names: Vec<Option<String>>,
    ) -> Tens {
        let name = self.fresh(base);
        self.seed += 1;
        let seed = self.seed;
        let d = self.decl(&name, dtype, dims);
        d.seed = Some(seed);
        if !dims.is_empty() {
            d.dim_names = dim_names;
        }
        self.inputs.push(name.clone());
        Tens {
            name,
            dtype,
            dims: dims.to_vec(),
        }
    }

    /// A weight read transposed: the same DRAM bytes declared in the transposed shape,
    /// its minor-to-major order permuted so that each element stays where it is.
    pub(super) fn transposed_weight(&mut self, w: &Tens, perm: &[usize]) -> Tens {
        let dims: Vec<u64> = perm.iter().map(|&p| w.dims[p]).collect();
        let m2m = self
            .decls
            .iter()
            .find(|d| d.name == w.name)
            .map(|d| d.minor_to_major.clone())
            .unwrap_or_else(|| (0..dims.len()).rev().collect());
        let mut inv = vec![0; perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            inv[p] = i;
        }
        let t = self.declare_input(&format!("{}_t", w.name), w.dtype, &dims, Vec::new());
        if let Some(d) = self.decls.iter_mut().find(|d| d.name == t.name) {
            d.minor_to_major = m2m.iter().map(|&a| inv[a]).collect();
        }
        self.weights.insert(t.name.clone());
        t
    }

    /// Appends a kernel step after checking the shape the kernel gives.
    pub(super) fn step(&mut self, kernel: Kernel, inputs: &[&Tens], out: &Tens) -> Result<(), Bad> {
        self.push(kernel, false, inputs, out)
    }

    /// Appends a `Cast` of `input` into `out` (of another dtype).
    pub(super) fn cast(&mut self, input: &Tens, out: &Tens) -> Result<(), Bad> {
        self.push(Kernel::Unary(UnaryOp::Copy), true, &[input], out)
    }

    fn push(
        &mut self,
        kernel: Kernel,
        cast: bool,
        inputs: &[&Tens],
        out: &Tens,
    ) -> Result<(), Bad> {
        let shapes: Vec<Vec<u64>> = inputs.iter().map(|t| t.declared_dims()).collect();
        let refs: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
        let want = mnsim_kernels::output_shape(&kernel, &refs).map_err(|e| e.message)?;
        let want = if want.is_empty() { vec![1] } else { want };
        let have = out.declared_dims();
        if want != have {
            return Err(format!(
                "the result has shape {have:?}, but the kernel ({kernel}) gives {want:?}"
            )
            .into());
        }
        let origin = self.origin.take();
        self.steps.push(Step {
            action: crate::import::lower::Action::Kernel(kernel),
            cast,
            inputs: inputs.iter().map(|t| t.name.clone()).collect(),
            out: out.name.clone(),
            origin,
            place: Default::default(),
        });
        Ok(())
    }

    /// The rows of `table` (a DRAM tensor: a graph input or an initializer) at the
    /// indices `indices` computes on the chip: an embedding lookup, the `Gather` op
    /// (`scenario::Op::Gather`). Its result is the indices' shape, then a row's.
    pub(super) fn gather_rows(
        &mut self,
        base: &str,
        table: &Tens,
        indices: &Tens,
    ) -> Result<Tens, Bad> {
        let in_dram = (self.decls.iter())
            .any(|d| d.name == table.name && (d.seed.is_some() || d.constant || d.init.is_some()));
        if !in_dram {
            return Err(format!(
                "Gather at run-time indices reads rows of a tensor in DRAM (a graph input or \
                 an initializer); `{}` is computed on the chip",
                table.name
            )
            .into());
        }
        if !indices.dtype.is_int() {
            return Err(format!("Gather indices must be integers, not {}", indices.dtype).into());
        }
        let dims: Vec<u64> = (indices.dims.iter())
            .chain(table.dims.iter().skip(1))
            .copied()
            .collect();
        let out = self.declare(base, table.dtype, &dims);
        let origin = self.origin.take();
        self.steps.push(Step {
            action: crate::import::lower::Action::Gather {
                table: table.name.clone(),
            },
            cast: false,
            inputs: vec![indices.name.clone()],
            out: out.name.clone(),
            origin,
            place: Default::default(),
        });
        Ok(out)
    }

    /// A kernel over `inputs` whose result shape the kernel gives: the result tensor.
    pub(super) fn apply(
        &mut self,
        base: &str,
        kernel: Kernel,
        inputs: &[&Tens],
        dtype: DType,
    ) -> Result<Tens, Bad> {
        let shapes: Vec<Vec<u64>> = inputs.iter().map(|t| t.declared_dims()).collect();
        let refs: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
        let dims = mnsim_kernels::output_shape(&kernel, &refs).map_err(|e| e.message)?;
        let o = self.declare(base, dtype, &dims);
        self.step(kernel, inputs, &o)?;
        Ok(o)
    }

    /// A constant as a DRAM tensor (loaded before its first use), shared by equal
    /// constants.
    pub(super) fn emit_const(&mut self, k: &Konst) -> Result<Tens, Bad> {
        if let Some((_, n)) = self.emitted.iter().find(|(e, _)| e == k) {
            return Ok(Tens {
                name: n.clone(),
                dtype: k.dtype,
                dims: k.dims.clone(),
            });
        }
        let init: Init = crate::import::stablehlo::emit::init_of(k)?;
        let base = format!("c{}", self.emitted.len());
        let t = self.declare(&base, k.dtype, &k.dims);
        if let Some(d) = self.decls.iter_mut().find(|d| d.name == t.name) {
            d.init = Some(init);
            d.constant = true;
        }
        self.inputs.push(t.name.clone());
        self.emitted.push((k.clone(), t.name.clone()));
        Ok(t)
    }

    /// A `Reshape` step (shared when the same reshape is asked again).
    pub(super) fn reshaped(&mut self, x: &Tens, dims: &[u64]) -> Result<Tens, Bad> {
        if x.dims == dims {
            return Ok(x.clone());
        }
        if x.declared_dims() == dims {
            return Ok(Tens {
                dims: dims.to_vec(),
                ..x.clone()
            });
        }
        let key = (x.name.clone(), dims.to_vec());
        if let Some(n) = self.reshaped.get(&key) {
            return Ok(Tens {
                name: n.clone(),
                dtype: x.dtype,
                dims: dims.to_vec(),
            });
        }
        let o = self.declare(&format!("{}_r", x.name), x.dtype, dims);
        let shape = o.declared_dims();
        self.step(Kernel::Reshape { shape }, &[x], &o)?;
        self.reshaped.insert(key, o.name.clone());
        Ok(o)
    }

    /// A value as a tensor for a kernel that does not broadcast: a constant as a DRAM
    /// tensor, a broadcast that adds no elements as its source reshaped.
    pub(super) fn tensor_of(&mut self, v: &Val, what: &str) -> Result<Tens, Bad> {
        match v {
            Val::T(t) => Ok(t.clone()),
            Val::C(k) => self.emit_const(k),
            Val::B { src, out }
                if src.dims.iter().product::<u64>() == out.iter().product::<u64>() =>
            {
                self.reshaped(src, out)
            }
            Val::B { .. } => Err(format!(
                "{what} is an `Expand` of a computed tensor that only elementwise ops may read (mnsim has no broadcast kernel; elementwise ops read broadcasts in place)"
            ).into()),
        }
    }
}

/// Why a node (or the graph) cannot be imported: the message, which the caller puts
/// after the node's label.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Bad(pub String);

impl From<String> for Bad {
    fn from(s: String) -> Bad {
        Bad(s)
    }
}

impl From<&str> for Bad {
    fn from(s: &str) -> Bad {
        Bad(s.to_string())
    }
}
