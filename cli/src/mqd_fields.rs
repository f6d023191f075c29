//! Named dwords of any MQD struct, by generation and kind: the field tables of the `mqd`
//! crate behind one function, for dumps, diffs and the trace's "MQD fields that changed".

use mqd::layout::{FieldInfo, MqdLayout};
use mqd::regs::COMPUTE_MQD_HEADER;
use mqd::{
    v10_compute_mqd, v10_sdma_mqd, v11_compute_mqd, v11_sdma_mqd, v9_mqd, v9_sdma_mqd, Generation,
};
use serde::Serialize;

/// Compute or SDMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum MqdKind {
    /// A compute MQD (user compute queues and the HIQ), 2048 bytes.
    Compute,
    /// An SDMA MQD (512 or 520 bytes).
    Sdma,
}

/// The layout of one MQD struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Table {
    /// C struct name.
    pub name: &'static str,
    /// Size in bytes.
    pub size: usize,
    /// Every field, reserved ranges included.
    pub fields: &'static [FieldInfo],
}

fn table_of<M: MqdLayout>() -> Table {
    Table {
        name: M::NAME,
        size: M::SIZE,
        fields: M::FIELDS,
    }
}

/// The layout of the `kind` MQD of `generation`.
pub fn table(generation: Generation, kind: MqdKind) -> Table {
    match (generation, kind) {
        (Generation::Gfx9, MqdKind::Compute) => table_of::<v9_mqd>(),
        (Generation::Gfx10, MqdKind::Compute) => table_of::<v10_compute_mqd>(),
        (Generation::Gfx11, MqdKind::Compute) => table_of::<v11_compute_mqd>(),
        (Generation::Gfx9, MqdKind::Sdma) => table_of::<v9_sdma_mqd>(),
        (Generation::Gfx10, MqdKind::Sdma) => table_of::<v10_sdma_mqd>(),
        (Generation::Gfx11, MqdKind::Sdma) => table_of::<v11_sdma_mqd>(),
    }
}

/// Compute when dword 0 is the compute MQD header `0xC0310800`, else SDMA.
pub fn detect_kind(bytes: &[u8]) -> MqdKind {
    if dword(bytes, 0) == Some(COMPUTE_MQD_HEADER) {
        MqdKind::Compute
    } else {
        MqdKind::Sdma
    }
}

/// Dword `index` of `bytes` (native-endian, as the struct is), if present.
pub fn dword(bytes: &[u8], index: usize) -> Option<u32> {
    let start = index.checked_mul(4)?;
    let chunk = bytes.get(start..start.checked_add(4)?)?;
    Some(u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
}

impl Table {
    /// The name of dword `index`: the field's name, `name+k` inside a multi-dword field, or
    /// `dwN` past the table.
    pub fn dword_name(&self, index: usize) -> String {
        match self
            .fields
            .iter()
            .find(|f| index >= f.dword && index < f.dword + f.dwords)
        {
            Some(f) if f.dwords > 1 => format!("{}+{}", f.name, index - f.dword),
            Some(f) => f.name.to_owned(),
            None => format!("dw{index}"),
        }
    }

    /// On `v9_mqd`, the GC 9.4.3 spelling of dwords 39–42.
    pub fn alias(&self, index: usize) -> Option<&'static str> {
        if self.name != v9_mqd::NAME {
            return None;
        }
        mqd::v9::V9_UNION_ALIASES
            .iter()
            .find(|(dw, _)| *dw == index)
            .map(|(_, alias)| *alias)
    }

    /// Dwords of the struct.
    pub fn dwords(&self) -> usize {
        self.size / 4
    }
}

/// One named dword and its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldValue {
    /// Dword index.
    pub dword: usize,
    /// Field name.
    pub name: String,
    /// Value.
    pub value: u32,
}

/// One dword that changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    /// Dword index.
    pub dword: usize,
    /// Field name.
    pub name: String,
    /// Value before.
    pub old: u32,
    /// Value after.
    pub new: u32,
}

/// The dwords of `bytes` laid out as `table`: all of them, or only the non-zero ones.
pub fn values(table: &Table, bytes: &[u8], include_zero: bool) -> Vec<FieldValue> {
    (0..table.dwords())
        .filter_map(|i| {
            let value = dword(bytes, i)?;
            let named = !table.dword_name(i).starts_with("reserved_");
            (value != 0 || (include_zero && named)).then(|| FieldValue {
                dword: i,
                name: table.dword_name(i),
                value,
            })
        })
        .collect()
}

/// The dwords that differ between `old` and `new`.
pub fn diff(table: &Table, old: &[u8], new: &[u8]) -> Vec<FieldChange> {
    (0..table.dwords())
        .filter_map(|i| {
            let (a, b) = (dword(old, i)?, dword(new, i)?);
            (a != b).then(|| FieldChange {
                dword: i,
                name: table.dword_name(i),
                old: a,
                new: b,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_the_facts_sizes() {
        let sizes: Vec<usize> = Generation::ALL
            .iter()
            .flat_map(|&g| {
                [
                    table(g, MqdKind::Compute).size,
                    table(g, MqdKind::Sdma).size,
                ]
            })
            .collect();
        assert_eq!(sizes, [2048, 512, 2048, 520, 2048, 512]);
        let v9 = table(Generation::Gfx9, MqdKind::Compute);
        assert_eq!(v9.dword_name(145), "cp_hqd_pq_control");
        assert_eq!(v9.dword_name(130), "cp_hqd_active");
        assert_eq!(v9.dword_name(9999), "dw9999");
        assert!(v9.alias(39).is_some());
        let v10s = table(Generation::Gfx10, MqdKind::Sdma);
        assert_eq!(v10s.dword_name(128), "sdma_engine_id");
    }

    #[test]
    fn diff_and_values_name_dwords() {
        let t = table(Generation::Gfx9, MqdKind::Compute);
        let mut a = vec![0u8; 2048];
        a[..4].copy_from_slice(&COMPUTE_MQD_HEADER.to_ne_bytes());
        let mut b = a.clone();
        b[130 * 4] = 1;
        b[131 * 4] = 8;
        assert_eq!(detect_kind(&a), MqdKind::Compute);
        assert_eq!(detect_kind(&[0u8; 4]), MqdKind::Sdma);
        let d = diff(&t, &a, &b);
        assert_eq!(
            d.iter()
                .map(|c| (c.name.as_str(), c.old, c.new))
                .collect::<Vec<_>>(),
            [("cp_hqd_active", 0, 1), ("cp_hqd_vmid", 0, 8)]
        );
        let v = values(&t, &b, false);
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].name, "header");
        assert!(values(&t, &b, true).len() > 100);
    }
}
