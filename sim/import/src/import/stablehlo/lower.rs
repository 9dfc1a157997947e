//! StableHLO → the import's kernel steps (`import::lower::{Decl, Step}`). The module's
//! public `main` is walked op by op with every call inlined; each SSA value is a
//! scenario tensor, a constant evaluated at import ([`Konst`]: splats, dense literals,
//! iotas, dimension sizes and what is computed from them alone), or a broadcast of a
//! tensor not materialised ([`Val::B`]: elementwise consumers read it through numpy
//! broadcasting).

use super::fold::Konst;
use super::parse::{At, Func, Module, Stmt, Ty, at};
use crate::import::lower::{Decl, Lowered, Step};
use mnsim_arch::DType;
use mnsim_kernels::{Kernel, UnaryOp};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

pub use crate::import::lower::Tens;

/// What an SSA value is at import.
#[derive(Clone, Debug)]
pub enum Val {
    /// A tensor of the scenario.
    T(Tens),
    /// A constant evaluated at import.
    C(Konst),
    /// `src`'s axis `j` broadcast into axis `map[j]` of a tensor of dims `out`.
    B {
        src: Tens,
        map: Vec<usize>,
        out: Vec<u64>,
    },
    /// No value (the result of a shape assertion).
    Unit,
}

impl Val {
    /// The constants of `vals` when every one is a constant evaluated at import.
    pub fn all_consts(vals: &[Val]) -> Option<Vec<&Konst>> {
        vals.iter()
            .map(|v| match v {
                Val::C(k) => Some(k),
                _ => None,
            })
            .collect()
    }

    pub fn dims(&self) -> Vec<u64> {
        match self {
            Val::T(t) => t.dims.clone(),
            Val::C(k) => k.dims.clone(),
            Val::B { out, .. } => out.clone(),
            Val::Unit => Vec::new(),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Val::T(t) => t.dtype,
            Val::C(k) => k.dtype,
            Val::B { src, .. } => src.dtype,
            Val::Unit => DType::Pred,
        }
    }
}

pub(super) struct Lx<'a> {
    funcs: BTreeMap<&'a str, &'a Func>,
    pub(super) decls: Vec<Decl>,
    pub(super) steps: Vec<Step>,
    pub(super) inputs: Vec<String>,
    names: BTreeSet<String>,
    /// Per base name, the suffix [`Lx::fresh`] tries next (so that a function inlined
    /// many times finds its names in constant time).
    next_suffix: BTreeMap<String, usize>,
    /// Reshapes already made: (tensor, shape) → the reshaped tensor.
    pub(super) reshaped: BTreeMap<(String, Vec<u64>), String>,
    /// Constants already emitted, by [`Konst::key`] → tensor.
    pub(super) emitted: BTreeMap<super::fold::KonstKey, String>,
    /// Where each declared tensor comes from: the op that makes it, the parameter's
    /// type (errors about the tensor point there).
    pub(super) spans: BTreeMap<String, Range<usize>>,
    /// The op being lowered.
    pub(super) at: Range<usize>,
    /// The iteration of the outermost `while` being unrolled: the layer of every step
    /// made meanwhile.
    pub(super) layer: Option<u32>,
    /// The comment for the next step.
    pub(super) origin: Option<String>,
    /// The function being walked (names its values) and the call depth.
    pub(super) prefix: String,
    depth: usize,
    /// Byte offsets where lines start (for the comment naming an op's line).
    lines: Vec<usize>,
    /// Op names in order of first appearance, and how many ops were walked.
    pub kinds: Vec<String>,
    pub ops: usize,
}

/// An `--bind`-style map of symbolic dimension sizes.
pub type Binds = BTreeMap<String, u64>;

fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

impl<'a> Lx<'a> {
    /// A fresh tensor name from `base`.
    pub(super) fn fresh(&mut self, base: &str) -> String {
        let mut b = clean(base);
        if !b.starts_with(|c: char| c.is_ascii_alphabetic()) {
            b = format!("v{b}");
        }
        let mut n = b.clone();
        if self.names.contains(&n) {
            let k = self.next_suffix.entry(b.clone()).or_insert(2);
            loop {
                n = format!("{b}_{k}");
                *k += 1;
                if !self.names.contains(&n) {
                    break;
                }
            }
        }
        self.names.insert(n.clone());
        n
    }

    /// Declares a computed tensor.
    pub(super) fn declare(&mut self, base: &str, dtype: DType, dims: &[u64]) -> Tens {
        let name = self.fresh(base);
        self.spans.insert(name.clone(), self.at.clone());
        let d = if dims.is_empty() {
            vec![1]
        } else {
            dims.to_vec()
        };
        self.decls.push(Decl {
            name: name.clone(),
            dtype,
            minor_to_major: (0..d.len()).rev().collect(),
            dims: d,
            seed: None,
            graph_id: None,
            constant: false,
            init: None,
            dim_names: Vec::new(),
        });
        Tens {
            name,
            dtype,
            dims: dims.to_vec(),
        }
    }

    /// Appends a kernel step after checking the shape the kernel gives.
    pub(super) fn step(
        &mut self,
        span: &Range<usize>,
        kernel: Kernel,
        inputs: &[&Tens],
        out: &Tens,
    ) -> Result<(), At> {
        self.push(span, kernel, false, inputs, out)
    }

    /// Appends a Gather of the rows of `table` (a DRAM tensor: an argument or a
    /// constant) at `indices` into `out`, after checking its shape.
    pub(super) fn gather(
        &mut self,
        span: &Range<usize>,
        table: &Tens,
        indices: &Tens,
        out: &Tens,
    ) -> Result<(), At> {
        let want: Vec<u64> = (indices.declared_dims().iter())
            .chain(table.declared_dims().iter().skip(1))
            .copied()
            .collect();
        if out.declared_dims() != want || out.dtype != table.dtype {
            return Err(at(
                span,
                format!(
                    "the result is {}{:?}, but the rows of `{}` at indices {:?} are {}{want:?}",
                    out.dtype,
                    out.declared_dims(),
                    table.name,
                    indices.declared_dims(),
                    table.dtype
                ),
            ));
        }
        let origin = self.origin.take();
        self.steps.push(Step {
            action: crate::import::lower::Action::Gather {
                table: table.name.clone(),
            },
            cast: false,
            inputs: vec![indices.name.clone()],
            out: out.name.clone(),
            origin,
            place: crate::scenario::Place {
                layer: self.layer,
                part: None,
            },
        });
        Ok(())
    }

    /// Whether `t` is in DRAM before the program runs: an argument of `@main` or a
    /// constant emitted as a tensor.
    pub(super) fn in_dram(&self, t: &Tens) -> bool {
        self.inputs.contains(&t.name)
    }

    /// Appends a `Cast` of `input` into `out` (of another dtype).
    pub(super) fn cast(&mut self, span: &Range<usize>, input: &Tens, out: &Tens) -> Result<(), At> {
        self.push(span, Kernel::Unary(UnaryOp::Copy), true, &[input], out)
    }

    fn push(
        &mut self,
        span: &Range<usize>,
        kernel: Kernel,
        cast: bool,
        inputs: &[&Tens],
        out: &Tens,
    ) -> Result<(), At> {
        let shapes: Vec<Vec<u64>> = inputs.iter().map(|t| t.declared_dims()).collect();
        let refs: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
        // The shape the run checks: the declared one, exactly (a scalar is `[1]`).
        let want = mnsim_kernels::output_shape(&kernel, &refs).map_err(|e| at(span, e.message))?;
        let have = out.declared_dims();
        if want != have {
            return Err(at(
                span,
                format!("the result has shape {have:?}, but the kernel ({kernel}) gives {want:?}"),
            ));
        }
        let origin = self.origin.take();
        self.steps.push(Step {
            action: crate::import::lower::Action::Kernel(kernel),
            cast,
            inputs: inputs.iter().map(|t| t.name.clone()).collect(),
            out: out.name.clone(),
            origin,
            place: crate::scenario::Place {
                layer: self.layer,
                part: None,
            },
        });
        Ok(())
    }

    /// The 1-based line of a byte offset.
    pub(super) fn line(&self, offset: usize) -> usize {
        self.lines.partition_point(|&s| s <= offset)
    }

    /// Inlines `f` with `args`: its results.
    pub(super) fn call(
        &mut self,
        span: &Range<usize>,
        name: &str,
        args: Vec<Val>,
    ) -> Result<Vec<Val>, At> {
        let f = *self
            .funcs
            .get(name)
            .ok_or_else(|| at(span, format!("no function `@{name}` in the module")))?;
        if self.depth >= 64 {
            return Err(at(
                span,
                format!("calls nest more than 64 deep at `@{name}` (recursion?)"),
            ));
        }
        if args.len() != f.params.len() {
            return Err(at(
                span,
                format!(
                    "`@{name}` takes {} argument(s), the call gives {}",
                    f.params.len(),
                    args.len()
                ),
            ));
        }
        let mut env: BTreeMap<String, Val> = BTreeMap::new();
        for (p, a) in f.params.iter().zip(args) {
            check_ty(&p.ty, &a, "the argument")?;
            env.insert(p.name.clone(), a);
        }
        let saved = std::mem::replace(&mut self.prefix, format!("{}_", clean(name)));
        self.depth += 1;
        let r = self.body(f, &mut env);
        self.depth -= 1;
        self.prefix = saved;
        r
    }

    fn body(&mut self, f: &Func, env: &mut BTreeMap<String, Val>) -> Result<Vec<Val>, At> {
        let mut defined = Vec::new();
        let Some((vals, ret)) = self.block(&f.body, env, &mut defined)? else {
            return Err(at(&f.span, format!("`@{}` has no `return`", f.name)));
        };
        if vals.len() != f.results.len() {
            return Err(at(
                &ret.span,
                format!(
                    "returns {} value(s) where `@{}` declares {}",
                    vals.len(),
                    f.name,
                    f.results.len()
                ),
            ));
        }
        for (v, t) in vals.iter().zip(&f.results) {
            check_ty(t, v, "the returned value")?;
        }
        Ok(vals)
    }

    /// Runs `ops` (a function's body, a region) in `env` up to its `return`: the values
    /// the `return` gives and the `return` itself (`None` when there is none). Every
    /// name it defines is added to `defined`, so that a region's scope can end.
    pub(super) fn block<'s>(
        &mut self,
        ops: &'s [Stmt],
        env: &mut BTreeMap<String, Val>,
        defined: &mut Vec<String>,
    ) -> Result<Option<(Vec<Val>, &'s Stmt)>, At> {
        for st in ops {
            if matches!(
                st.name.as_str(),
                "return" | "func.return" | "stablehlo.return"
            ) {
                return Ok(Some((self.operands(st, env)?, st)));
            }
            self.ops += 1;
            if !self.kinds.contains(&st.name) {
                self.kinds.push(st.name.clone());
            }
            let vals = super::ops::op(self, st, env)?;
            if vals.len() != st.results.len() {
                return Err(at(
                    &st.span,
                    format!(
                        "`{}` gives {} value(s) here, the line names {}",
                        st.name,
                        vals.len(),
                        st.results.len()
                    ),
                ));
            }
            for (r, v) in st.results.iter().zip(vals) {
                define(env, st, r, v)?;
                defined.push(r.clone());
            }
        }
        Ok(None)
    }

    /// The values the op's `%names` refer to, in order.
    pub(super) fn operands(&self, st: &Stmt, env: &BTreeMap<String, Val>) -> Result<Vec<Val>, At> {
        let mut out = Vec::new();
        for t in &st.args {
            if let super::lex::Tok::Value(v) = &t.tok {
                let val = env
                    .get(v)
                    .ok_or_else(|| at(&t.span, format!("`%{v}` is not defined before this op")))?;
                out.push(val.clone());
            }
        }
        Ok(out)
    }
}

/// Binds `%name` to `v`, refusing a name already defined (SSA values are defined once).
pub(super) fn define(
    env: &mut BTreeMap<String, Val>,
    st: &Stmt,
    name: &str,
    v: Val,
) -> Result<(), At> {
    if env.contains_key(name) {
        let shown = name.split('#').next().unwrap_or(name);
        return Err(at(
            &st.span,
            format!("`%{shown}` is defined twice: an SSA value is defined once"),
        ));
    }
    env.insert(name.to_string(), v);
    Ok(())
}

/// Checks a value against a declared type: rank, element type, and every static
/// dimension (a `?` takes any size).
pub(super) fn check_ty(ty: &Ty, v: &Val, what: &str) -> Result<(), At> {
    if matches!(v, Val::Unit) {
        return Err(at(
            &ty.span,
            format!("{what} has no value (a shape assertion's result)"),
        ));
    }
    let dims = v.dims();
    let ok_dims = dims.len() == ty.dims.len()
        && ty
            .dims
            .iter()
            .zip(&dims)
            .all(|(t, d)| t.is_none_or(|t| t == *d));
    if !ok_dims || v.dtype() != ty.dtype {
        return Err(at(
            &ty.span,
            format!(
                "{what} is {}{:?}, but the type says {}{}",
                v.dtype(),
                dims,
                ty.dtype,
                show_dims(&ty.dims)
            ),
        ));
    }
    Ok(())
}

pub(super) fn show_dims(d: &[Option<u64>]) -> String {
    let s: Vec<String> = d
        .iter()
        .map(|x| x.map_or("?".to_string(), |v| v.to_string()))
        .collect();
    format!("[{}]", s.join(", "))
}

/// What the lowering gives beyond the steps.
pub struct Out {
    pub low: Lowered,
    /// Where each tensor of `low` comes from in the file (its parameter's type, or the
    /// op that makes it).
    pub spans: BTreeMap<String, Range<usize>>,
    pub kinds: Vec<String>,
    pub ops: usize,
}

/// Lowers the module's public `main` (or its only public function) with `binds`
/// giving its symbolic dimensions.
pub fn lower(m: &Module, binds: &Binds, text: &str) -> Result<Out, At> {
    let funcs: BTreeMap<&str, &Func> = m.funcs.iter().map(|f| (f.name.as_str(), f)).collect();
    let publics: Vec<&Func> = m.funcs.iter().filter(|f| f.public).collect();
    let main = match publics.iter().find(|f| f.name == "main") {
        Some(f) => *f,
        None if publics.len() == 1 => publics[0],
        None => {
            return Err(at(
                &m.funcs[0].span,
                "no public `@main`, and not exactly one public function to take for it",
            ));
        }
    };
    let sym = super::signature::symbolic_names(main, &funcs);
    let mut lx = Lx {
        funcs,
        decls: Vec::new(),
        steps: Vec::new(),
        inputs: Vec::new(),
        names: BTreeSet::new(),
        next_suffix: BTreeMap::new(),
        reshaped: BTreeMap::new(),
        emitted: BTreeMap::new(),
        spans: BTreeMap::new(),
        at: 0..0,
        layer: None,
        origin: None,
        prefix: String::new(),
        depth: 0,
        lines: std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
        kinds: Vec::new(),
        ops: 0,
    };
    let mut bind = Vec::new();
    let mut env = BTreeMap::new();
    for (i, p) in main.params.iter().enumerate() {
        let (dims, dim_names) = super::signature::param_dims(main, i, &sym, binds, &mut bind)?;
        let name = lx.fresh(p.loc_name.as_deref().unwrap_or(&format!("arg{i}")));
        lx.spans.insert(name.clone(), p.ty.span.clone());
        let shape = if dims.is_empty() {
            vec![1]
        } else {
            dims.clone()
        };
        let m2m = super::signature::layout_mode(p, dims.len())
            .unwrap_or_else(|| (0..shape.len()).rev().collect());
        lx.decls.push(Decl {
            name: name.clone(),
            dtype: p.ty.dtype,
            dims: shape,
            minor_to_major: m2m,
            seed: Some(i as u64 + 1),
            graph_id: None,
            constant: false,
            init: None,
            dim_names: if dims.is_empty() {
                Vec::new()
            } else {
                dim_names
            },
        });
        lx.inputs.push(name.clone());
        let v = Val::T(Tens {
            name,
            dtype: p.ty.dtype,
            dims,
        });
        env.insert(p.name.clone(), v);
    }
    let results = lx.body(main, &mut env)?;
    let outputs = super::signature::outputs(&mut lx, main, &results)?;
    super::parts::place(&mut lx.steps, &lx.decls);
    Ok(Out {
        low: Lowered {
            decls: lx.decls,
            steps: lx.steps,
            inputs: lx.inputs,
            outputs,
            bind,
        },
        spans: lx.spans,
        kinds: lx.kinds,
        ops: lx.ops,
    })
}
