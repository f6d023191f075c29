//! Published layout of every ABI struct: size, alignment and each field's offset and size,
//! computed by the compiler (`offset_of!`, `size_of`), never written by hand.

/// One field of an ABI struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldLayout {
    /// The C field name.
    pub name: &'static str,
    /// Byte offset from the start of the struct.
    pub offset: usize,
    /// Size in bytes (0 for a flexible array member).
    pub size: usize,
}

/// The layout of one ABI struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StructLayout {
    /// The C struct name (without `struct`).
    pub name: &'static str,
    /// `sizeof` in bytes.
    pub size: usize,
    /// Alignment in bytes.
    pub align: usize,
    /// The fields in declaration order.
    pub fields: &'static [FieldLayout],
}

impl StructLayout {
    /// The field called `name`, if the struct has one.
    pub fn field(&self, name: &str) -> Option<&FieldLayout> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Implemented by every ABI struct of this crate.
pub trait AbiLayout {
    /// Size, alignment and field offsets of the struct.
    const ABI_LAYOUT: StructLayout;
}

/// Reads a C union member from the union's bytes (every member starts at offset 0).
pub(crate) fn read_member<T: zerocopy::FromBytes + zerocopy::IntoBytes, const N: usize>(
    bytes: &[u8; N],
) -> T {
    const { assert!(core::mem::size_of::<T>() <= N) };
    let mut value = T::new_zeroed();
    let size = core::mem::size_of::<T>();
    value.as_mut_bytes().copy_from_slice(&bytes[..size]);
    value
}

/// Writes a C union member into the union's bytes, leaving the bytes past it unchanged.
pub(crate) fn write_member<T: zerocopy::IntoBytes + zerocopy::Immutable, const N: usize>(
    bytes: &mut [u8; N],
    value: &T,
) {
    const { assert!(core::mem::size_of::<T>() <= N) };
    let size = core::mem::size_of::<T>();
    bytes[..size].copy_from_slice(value.as_bytes());
}
