//! The `NT_AMDGPU_METADATA` note of code objects v3–v5: a MessagePack map with `amdhsa.version`,
//! `amdhsa.target` and `amdhsa.kernels` (AMDGPUUsage, "Code Object V3 Metadata" and later).

use rmpv::Value;

use crate::error::{Error, Result};

/// The note owner of AMDGPU notes.
pub const NOTE_OWNER_AMDGPU: &[u8] = b"AMDGPU";
/// The note type of the MessagePack metadata.
pub const NT_AMDGPU_METADATA: u32 = 32;

/// Nesting bound for the decoder: real metadata is 4 levels deep.
const MAX_DEPTH: usize = 16;

/// The decoded metadata note.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metadata {
    /// `amdhsa.version` (major, minor): 1.0 for v3, 1.1 for v4, 1.2 for v5.
    pub version: Option<(u64, u64)>,
    /// `amdhsa.target`, the target ID string (v4+).
    pub target: Option<String>,
    /// `amdhsa.printf`: printf format descriptors.
    pub printf: Vec<String>,
    /// `amdhsa.kernels`.
    pub kernels: Vec<KernelMetadata>,
}

/// One kernel's metadata.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelMetadata {
    /// `.name`: the source-level (for C++ mangled) name.
    pub name: String,
    /// `.symbol`: the descriptor's symbol, `<name>.kd`.
    pub symbol: String,
    /// `.language`, e.g. `OpenCL C`, `HIP`.
    pub language: Option<String>,
    /// `.language_version`.
    pub language_version: Vec<u64>,
    /// `.args`, in kernarg order, hidden ones included.
    pub args: Vec<KernelArgument>,
    /// `.kernarg_segment_size`.
    pub kernarg_segment_size: u64,
    /// `.kernarg_segment_align`.
    pub kernarg_segment_align: u64,
    /// `.group_segment_fixed_size`.
    pub group_segment_fixed_size: u64,
    /// `.private_segment_fixed_size`.
    pub private_segment_fixed_size: u64,
    /// `.wavefront_size`.
    pub wavefront_size: u64,
    /// `.sgpr_count`.
    pub sgpr_count: u64,
    /// `.vgpr_count`.
    pub vgpr_count: u64,
    /// `.agpr_count` (gfx90a and later).
    pub agpr_count: Option<u64>,
    /// `.sgpr_spill_count`.
    pub sgpr_spill_count: Option<u64>,
    /// `.vgpr_spill_count`.
    pub vgpr_spill_count: Option<u64>,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: Option<u64>,
    /// `.uses_dynamic_stack`.
    pub uses_dynamic_stack: Option<bool>,
    /// `.reqd_workgroup_size`.
    pub reqd_workgroup_size: Option<Vec<u64>>,
}

/// One kernel argument.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelArgument {
    /// `.name`.
    pub name: Option<String>,
    /// `.type_name`.
    pub type_name: Option<String>,
    /// `.offset` in the kernarg segment.
    pub offset: u64,
    /// `.size` in bytes.
    pub size: u64,
    /// `.value_kind`: `by_value`, `global_buffer`, `hidden_global_offset_x`, …
    pub value_kind: String,
    /// `.address_space` for pointers: `global`, `local`, `constant`, …
    pub address_space: Option<String>,
    /// `.access` / `.actual_access`.
    pub access: Option<String>,
    /// `.is_const`.
    pub is_const: bool,
    /// `.is_restrict`.
    pub is_restrict: bool,
    /// `.is_volatile`.
    pub is_volatile: bool,
}

impl KernelArgument {
    /// Arguments the runtime fills in (`hidden_*` value kinds).
    pub fn is_hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

fn bad(detail: impl Into<String>) -> Error {
    Error::malformed("AMDGPU metadata", detail)
}

fn map_entries<'v>(value: &'v Value, what: &str) -> Result<&'v [(Value, Value)]> {
    value
        .as_map()
        .map(Vec::as_slice)
        .ok_or_else(|| bad(format!("{what} is not a map")))
}

fn get<'v>(map: &'v [(Value, Value)], key: &str) -> Option<&'v Value> {
    map.iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

fn string(map: &[(Value, Value)], key: &str) -> Result<Option<String>> {
    match get(map, key) {
        None => Ok(None),
        Some(v) => v
            .as_str()
            .map(|s| Some(s.to_string()))
            .ok_or_else(|| bad(format!("{key} is not a string"))),
    }
}

fn uint(map: &[(Value, Value)], key: &str) -> Result<Option<u64>> {
    match get(map, key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| bad(format!("{key} is not an unsigned integer"))),
    }
}

fn boolean(map: &[(Value, Value)], key: &str) -> Result<Option<bool>> {
    match get(map, key) {
        None => Ok(None),
        Some(v) => v
            .as_bool()
            .map(Some)
            .ok_or_else(|| bad(format!("{key} is not a boolean"))),
    }
}

fn uint_list(map: &[(Value, Value)], key: &str) -> Result<Option<Vec<u64>>> {
    match get(map, key) {
        None => Ok(None),
        Some(v) => {
            let items = v
                .as_array()
                .ok_or_else(|| bad(format!("{key} is not an array")))?;
            items
                .iter()
                .map(|i| {
                    i.as_u64()
                        .ok_or_else(|| bad(format!("{key} holds a non-integer")))
                })
                .collect::<Result<Vec<_>>>()
                .map(Some)
        }
    }
}

fn required<T>(value: Option<T>, key: &str, kernel: &str) -> Result<T> {
    value.ok_or_else(|| bad(format!("kernel {kernel:?} lacks {key}")))
}

impl Metadata {
    /// Decodes the note's descriptor bytes.
    pub fn parse(desc: &[u8]) -> Result<Self> {
        let mut reader = desc;
        let root = rmpv::decode::read_value_with_max_depth(&mut reader, MAX_DEPTH)
            .map_err(|e| bad(format!("MessagePack: {e}")))?;
        let root = map_entries(&root, "the root")?;
        let version = match uint_list(root, "amdhsa.version")? {
            Some(v) if v.len() == 2 => Some((v[0], v[1])),
            Some(_) => return Err(bad("amdhsa.version is not [major, minor]")),
            None => None,
        };
        let printf = match get(root, "amdhsa.printf") {
            None => Vec::new(),
            Some(v) => v
                .as_array()
                .ok_or_else(|| bad("amdhsa.printf is not an array"))?
                .iter()
                .map(|s| {
                    s.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| bad("amdhsa.printf holds a non-string"))
                })
                .collect::<Result<_>>()?,
        };
        let kernels = match get(root, "amdhsa.kernels") {
            None => Vec::new(),
            Some(v) => v
                .as_array()
                .ok_or_else(|| bad("amdhsa.kernels is not an array"))?
                .iter()
                .map(KernelMetadata::parse)
                .collect::<Result<_>>()?,
        };
        Ok(Metadata {
            version,
            target: string(root, "amdhsa.target")?,
            printf,
            kernels,
        })
    }

    /// The kernel whose `.name` or `.symbol` is `name`.
    pub fn kernel(&self, name: &str) -> Option<&KernelMetadata> {
        self.kernels
            .iter()
            .find(|k| k.name == name || k.symbol == name)
    }
}

impl KernelMetadata {
    fn parse(value: &Value) -> Result<Self> {
        let map = map_entries(value, "a kernel")?;
        let name = string(map, ".name")?.ok_or_else(|| bad("a kernel lacks .name"))?;
        let args = match get(map, ".args") {
            None => Vec::new(),
            Some(v) => v
                .as_array()
                .ok_or_else(|| bad(format!("kernel {name:?}: .args is not an array")))?
                .iter()
                .map(KernelArgument::parse)
                .collect::<Result<_>>()?,
        };
        Ok(KernelMetadata {
            symbol: required(string(map, ".symbol")?, ".symbol", &name)?,
            language: string(map, ".language")?,
            language_version: uint_list(map, ".language_version")?.unwrap_or_default(),
            args,
            kernarg_segment_size: required(
                uint(map, ".kernarg_segment_size")?,
                ".kernarg_segment_size",
                &name,
            )?,
            kernarg_segment_align: required(
                uint(map, ".kernarg_segment_align")?,
                ".kernarg_segment_align",
                &name,
            )?,
            group_segment_fixed_size: required(
                uint(map, ".group_segment_fixed_size")?,
                ".group_segment_fixed_size",
                &name,
            )?,
            private_segment_fixed_size: required(
                uint(map, ".private_segment_fixed_size")?,
                ".private_segment_fixed_size",
                &name,
            )?,
            wavefront_size: required(uint(map, ".wavefront_size")?, ".wavefront_size", &name)?,
            sgpr_count: required(uint(map, ".sgpr_count")?, ".sgpr_count", &name)?,
            vgpr_count: required(uint(map, ".vgpr_count")?, ".vgpr_count", &name)?,
            agpr_count: uint(map, ".agpr_count")?,
            sgpr_spill_count: uint(map, ".sgpr_spill_count")?,
            vgpr_spill_count: uint(map, ".vgpr_spill_count")?,
            max_flat_workgroup_size: uint(map, ".max_flat_workgroup_size")?,
            uses_dynamic_stack: boolean(map, ".uses_dynamic_stack")?,
            reqd_workgroup_size: uint_list(map, ".reqd_workgroup_size")?,
            name,
        })
    }
}

impl KernelArgument {
    fn parse(value: &Value) -> Result<Self> {
        let map = map_entries(value, "a kernel argument")?;
        Ok(KernelArgument {
            name: string(map, ".name")?,
            type_name: string(map, ".type_name")?,
            offset: uint(map, ".offset")?.ok_or_else(|| bad("an argument lacks .offset"))?,
            size: uint(map, ".size")?.ok_or_else(|| bad("an argument lacks .size"))?,
            value_kind: string(map, ".value_kind")?
                .ok_or_else(|| bad("an argument lacks .value_kind"))?,
            address_space: string(map, ".address_space")?,
            access: match string(map, ".access")? {
                Some(a) => Some(a),
                None => string(map, ".actual_access")?,
            },
            is_const: boolean(map, ".is_const")?.unwrap_or(false),
            is_restrict: boolean(map, ".is_restrict")?.unwrap_or(false),
            is_volatile: boolean(map, ".is_volatile")?.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, v).unwrap();
        out
    }

    fn s(x: &str) -> Value {
        Value::from(x)
    }

    #[test]
    fn decodes_kernels_and_rejects_wrong_types() {
        let arg = Value::Map(vec![
            (s(".offset"), Value::from(0)),
            (s(".size"), Value::from(8)),
            (s(".value_kind"), s("global_buffer")),
            (s(".address_space"), s("global")),
        ]);
        let hidden = Value::Map(vec![
            (s(".offset"), Value::from(8)),
            (s(".size"), Value::from(8)),
            (s(".value_kind"), s("hidden_global_offset_x")),
        ]);
        let kernel = |sgprs: Value| {
            Value::Map(vec![
                (s(".name"), s("k")),
                (s(".symbol"), s("k.kd")),
                (s(".args"), Value::Array(vec![arg.clone(), hidden.clone()])),
                (s(".kernarg_segment_size"), Value::from(16)),
                (s(".kernarg_segment_align"), Value::from(8)),
                (s(".group_segment_fixed_size"), Value::from(0)),
                (s(".private_segment_fixed_size"), Value::from(0)),
                (s(".wavefront_size"), Value::from(64)),
                (s(".sgpr_count"), sgprs),
                (s(".vgpr_count"), Value::from(3)),
            ])
        };
        let root = |k: Value| {
            Value::Map(vec![
                (
                    s("amdhsa.version"),
                    Value::Array(vec![Value::from(1), Value::from(1)]),
                ),
                (s("amdhsa.target"), s("amdgcn-amd-amdhsa--gfx900")),
                (s("amdhsa.kernels"), Value::Array(vec![k])),
            ])
        };
        let md = Metadata::parse(&encode(&root(kernel(Value::from(10))))).unwrap();
        assert_eq!(md.version, Some((1, 1)));
        let k = md.kernel("k.kd").unwrap();
        assert_eq!((k.sgpr_count, k.wavefront_size, k.args.len()), (10, 64, 2));
        assert!(!k.args[0].is_hidden() && k.args[1].is_hidden());
        assert!(Metadata::parse(&encode(&root(kernel(s("ten"))))).is_err());
        let good = encode(&root(kernel(Value::from(10))));
        for len in 0..good.len() {
            assert!(
                Metadata::parse(&good[..len]).is_err(),
                "prefix {len} parsed"
            );
        }
    }
}
