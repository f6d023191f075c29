//! Field tables: every MQD struct publishes its named fields with their dword index, so that
//! printers, dumps and tests can walk a descriptor by name without repeating the layout.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// One field of an MQD struct: its C name, first dword index and width in dwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// The C field name (`cp_hqd_pq_control`, `reserved_43`, …).
    pub name: &'static str,
    /// Dword index of the field's first dword inside the MQD.
    pub dword: usize,
    /// Width of the field in dwords (1 for registers, more for reserved arrays).
    pub dwords: usize,
}

impl FieldInfo {
    /// `true` for the explicitly named reserved dwords, which carry no meaning.
    pub fn is_reserved(&self) -> bool {
        self.name.starts_with("reserved_")
    }
}

/// What every MQD struct of this crate tells about its own layout.
pub trait MqdLayout: FromBytes + IntoBytes + KnownLayout + Immutable + Sized {
    /// The C struct name (`v9_mqd`, `v10_sdma_mqd`, …).
    const NAME: &'static str;
    /// Size of the struct in bytes, as the kernel's `sizeof`.
    const SIZE: usize;
    /// Every field in dword order, reserved ranges included; together they cover the struct.
    const FIELDS: &'static [FieldInfo];

    /// The raw dword at `index`, or `None` past the end of the struct.
    fn dword(&self, index: usize) -> Option<u32> {
        let start = index.checked_mul(4)?;
        let bytes = self.as_bytes().get(start..start.checked_add(4)?)?;
        let mut word = [0u8; 4];
        word.copy_from_slice(bytes);
        Some(u32::from_ne_bytes(word))
    }

    /// The named field covering dword `index` (a reserved range reports its own name).
    fn field_at(index: usize) -> Option<&'static FieldInfo> {
        Self::FIELDS
            .iter()
            .find(|f| index >= f.dword && index < f.dword + f.dwords)
    }

    /// Every non-zero dword with its index and field name, printable with `Display`.
    fn dump(&self) -> crate::print::FieldDump<'_, Self> {
        crate::print::FieldDump::new(self)
    }

    /// The field called `name`, if the struct has one.
    fn field_named(name: &str) -> Option<&'static FieldInfo> {
        Self::FIELDS.iter().find(|f| f.name == name)
    }
}

/// Declares an MQD struct from a `dword name: type` list: the `#[repr(C)]` zerocopy struct,
/// one compile-time assertion per field that it sits at `dword × 4`, a size assertion, and
/// the [`MqdLayout`] field table.
macro_rules! mqd_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident ($bytes:literal bytes) {
            $( $dw:literal $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[derive(
            zerocopy::FromBytes,
            zerocopy::IntoBytes,
            zerocopy::KnownLayout,
            zerocopy::Immutable,
        )]
        #[repr(C)]
        pub struct $name {
            $(
                #[doc = concat!("dw", stringify!($dw), ": `", stringify!($field), "`.")]
                pub $field: $ty,
            )*
        }

        const _: () = assert!(core::mem::size_of::<$name>() == $bytes);
        $(
            const _: () = assert!(core::mem::offset_of!($name, $field) == $dw * 4);
        )*

        impl $crate::layout::MqdLayout for $name {
            const NAME: &'static str = stringify!($name);
            const SIZE: usize = $bytes;
            const FIELDS: &'static [$crate::layout::FieldInfo] = &[
                $(
                    $crate::layout::FieldInfo {
                        name: stringify!($field),
                        dword: $dw,
                        dwords: core::mem::size_of::<$ty>() / 4,
                    },
                )*
            ];
        }

        impl Default for $name {
            fn default() -> Self {
                <Self as zerocopy::FromZeros>::new_zeroed()
            }
        }
    };
}
