//! The decoded ONNX model checked: its opset, its element types, the tensors it holds
//! (initializers and `Constant` values, read when the file holds them, marked external
//! otherwise), the declared shapes of graph inputs, outputs and `value_info`.

use super::lower::Bad;
use super::proto::{self, TensorProto, tensor_proto, tensor_shape_proto::dimension};
use crate::import::stablehlo::fold::{FOLD_LIMIT, Konst};
use mnsim_arch::DType;
use prost::Message;
use std::rc::Rc;

/// The oldest default-domain opset mnsim reads (what `torch.onnx.export` writes by
/// default since PyTorch 2.0 is 17 or later).
pub const MIN_OPSET: i64 = 13;

/// The decoded model and its default-domain opset.
pub struct Model {
    pub proto: proto::ModelProto,
    pub opset: i64,
}

/// Decodes `bytes` as an ONNX `ModelProto` and checks its opset.
pub fn decode(bytes: &[u8]) -> Result<Model, Bad> {
    let m = proto::ModelProto::decode(bytes).map_err(|e| {
        format!("not an ONNX model (the protobuf does not decode as a ModelProto: {e})")
    })?;
    if m.graph.is_none() {
        return Err("the model has no graph (is this an ONNX file?)".into());
    }
    let opset = m
        .opset_import
        .iter()
        .find(|o| matches!(o.domain.as_deref(), None | Some("" | "ai.onnx")))
        .and_then(|o| o.version)
        .ok_or("the model imports no default-domain (`ai.onnx`) opset")?;
    if opset < MIN_OPSET {
        return Err(format!(
            "the model uses opset {opset}; mnsim reads opset {MIN_OPSET} and later (export with `opset_version=17` or newer)"
        ).into());
    }
    Ok(Model { proto: m, opset })
}

/// The mnsim dtype of an ONNX element type.
pub fn dtype(t: i32) -> Result<DType, Bad> {
    use tensor_proto::DataType as D;
    let d = D::try_from(t).map_err(|_| format!("unknown ONNX element type {t}"))?;
    Ok(match d {
        D::Float => DType::F32,
        D::Uint8 => DType::U8,
        D::Int8 => DType::S8,
        D::Uint16 => DType::U16,
        D::Int16 => DType::S16,
        D::Int32 => DType::S32,
        D::Int64 => DType::S64,
        D::Bool => DType::Pred,
        D::Float16 => DType::F16,
        D::Double => DType::F64,
        D::Uint32 => DType::U32,
        D::Uint64 => DType::U64,
        D::Bfloat16 => DType::BF16,
        D::Float8e4m3fn => DType::F8E4M3,
        D::Float8e5m2 => DType::F8E5M2,
        D::Uint4 => DType::U4,
        D::Int4 => DType::S4,
        D::Undefined
        | D::String
        | D::Complex64
        | D::Complex128
        | D::Float8e4m3fnuz
        | D::Float8e5m2fnuz
        | D::Float4e2m1
        | D::Float8e8m0
        | D::Uint2
        | D::Int2
        | D::Float6e2m3
        | D::Float6e3m2 => {
            return Err(format!(
                "the ONNX element type {} has no mnsim dtype",
                d.as_str_name()
            )
            .into());
        }
    })
}

/// A tensor the file holds: its dtype, dims, and its values when the file has them.
pub struct Held {
    pub dtype: DType,
    pub dims: Vec<u64>,
    /// `None` when the values are external data (or too many to read).
    pub values: Option<Konst>,
    /// The external data file it names, if any.
    pub external: Option<String>,
}

fn dims_of(t: &TensorProto) -> Result<Vec<u64>, Bad> {
    t.dims
        .iter()
        .map(|&d| u64::try_from(d).map_err(|_| Bad(format!("a negative dimension {d}"))))
        .collect()
}

/// The values of little-endian `raw` bytes of `dtype`.
fn raw_values(raw: &[u8], dtype: DType, n: usize) -> Result<Vec<f64>, Bad> {
    let size = match dtype {
        DType::Pred | DType::S8 | DType::U8 | DType::S4 | DType::U4 => 1,
        DType::F8E4M3 | DType::F8E5M2 => 1,
        DType::S16 | DType::U16 | DType::F16 | DType::BF16 => 2,
        DType::S32 | DType::U32 | DType::F32 => 4,
        DType::S64 | DType::U64 | DType::F64 => 8,
    };
    if raw.len() != n.saturating_mul(size) {
        return Err(format!(
            "its raw data has {} bytes; {n} elements of {dtype} need {}",
            raw.len(),
            n.saturating_mul(size)
        )
        .into());
    }
    let mut out = Vec::with_capacity(n);
    for c in raw.chunks_exact(size) {
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(c);
        let v = match dtype {
            DType::Pred | DType::U8 | DType::U4 => c[0] as f64,
            DType::S8 | DType::S4 => c[0] as i8 as f64,
            DType::S16 => i16::from_le_bytes([c[0], c[1]]) as f64,
            DType::U16 => u16::from_le_bytes([c[0], c[1]]) as f64,
            DType::F16 => half_to_f64(u16::from_le_bytes([c[0], c[1]])),
            DType::BF16 => f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16) as f64,
            DType::S32 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
            DType::U32 => u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
            DType::F32 => f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
            DType::S64 => i64::from_le_bytes(b) as f64,
            DType::U64 => u64::from_le_bytes(b) as f64,
            DType::F64 => f64::from_le_bytes(b),
            DType::F8E4M3 | DType::F8E5M2 => {
                return Err(format!("mnsim does not read {dtype} constants").into());
            }
        };
        out.push(v);
    }
    Ok(out)
}

/// IEEE half precision bits as a value.
fn half_to_f64(h: u16) -> f64 {
    let s = if h >> 15 == 1 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    match e {
        0 => s * m * 2f64.powi(-24),
        31 if m == 0.0 => s * f64::INFINITY,
        31 => f64::NAN,
        _ => s * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

/// Reads a tensor of the file; its values only when `want_values` (and the file holds
/// them, and there are at most [`FOLD_LIMIT`]).
pub fn held(t: &TensorProto, want_values: bool) -> Result<Held, Bad> {
    let dtype = dtype(t.data_type.unwrap_or(0))?;
    let dims = dims_of(t)?;
    let n = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let external =
        (t.data_location == Some(tensor_proto::DataLocation::External as i32)).then(|| {
            t.external_data
                .iter()
                .find(|e| e.key.as_deref() == Some("location"))
                .and_then(|e| e.value.clone())
                .unwrap_or_default()
        });
    let small = n.is_some_and(|n| n <= FOLD_LIMIT);
    let values = if !want_values || external.is_some() || !small {
        None
    } else {
        let n = n.unwrap_or(0) as usize;
        let data: Vec<f64> = if let Some(raw) = t.raw_data.as_deref().filter(|r| !r.is_empty()) {
            raw_values(raw, dtype, n)?
        } else if !t.float_data.is_empty() {
            t.float_data.iter().map(|&v| v as f64).collect()
        } else if !t.double_data.is_empty() {
            t.double_data.clone()
        } else if !t.int64_data.is_empty() {
            t.int64_data.iter().map(|&v| v as f64).collect()
        } else if !t.uint64_data.is_empty() {
            t.uint64_data.iter().map(|&v| v as f64).collect()
        } else if !t.int32_data.is_empty() {
            // int32_data also carries the bits of 16-bit and smaller types.
            t.int32_data
                .iter()
                .map(|&v| match dtype {
                    DType::F16 => half_to_f64(v as u16),
                    DType::BF16 => f32::from_bits((v as u32) << 16) as f64,
                    _ => v as f64,
                })
                .collect()
        } else {
            Vec::new()
        };
        if data.len() != n {
            return Err(format!(
                "it holds {} values for shape {dims:?} ({n} elements)",
                data.len()
            )
            .into());
        }
        Some(Konst {
            dtype,
            dims: dims.clone(),
            data: Rc::new(data),
        })
    };
    Ok(Held {
        dtype,
        dims,
        values,
        external,
    })
}

/// A value's declared element type and dims (`None` without a shape).
pub type TypeOf = (DType, Option<Vec<Dim>>);

/// A declared dimension: a size, a name (`dim_param`), or unknown.
#[derive(Clone, Debug, PartialEq)]
pub enum Dim {
    Size(u64),
    Named(String),
    Unknown,
}

/// The element type and dims a `ValueInfoProto` declares (`None` where it declares no
/// tensor type or no shape).
pub fn declared(v: &proto::ValueInfoProto) -> Result<Option<TypeOf>, Bad> {
    let Some(proto::type_proto::Value::TensorType(tt)) =
        v.r#type.as_ref().and_then(|t| t.value.as_ref())
    else {
        return Ok(None);
    };
    let dt = dtype(tt.elem_type.unwrap_or(0))?;
    let Some(shape) = &tt.shape else {
        return Ok(Some((dt, None)));
    };
    let dims = shape
        .dim
        .iter()
        .map(|d| match &d.value {
            Some(dimension::Value::DimValue(v)) if *v >= 0 => Dim::Size(*v as u64),
            Some(dimension::Value::DimParam(p)) if !p.is_empty() => Dim::Named(p.clone()),
            _ => Dim::Unknown,
        })
        .collect();
    Ok(Some((dt, Some(dims))))
}
