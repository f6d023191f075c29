//! Declaration macros: one spelling per ABI item, from which the type, its compile-time size
//! assertion and its published layout all follow, so they cannot disagree.

/// Declares a `#[repr(C)]` ABI struct: derives the zerocopy traits (the `IntoBytes` derive
/// rejects implicit padding, so every pad must be an explicit field), asserts its size at
/// compile time and implements [`AbiLayout`](crate::AbiLayout) from the field list.
macro_rules! abi_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident ($size:literal bytes) {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash,
            zerocopy::FromBytes, zerocopy::IntoBytes, zerocopy::KnownLayout, zerocopy::Immutable,
        )]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl Default for $name {
            /// All bytes zero, as user space memsets an argument before filling it.
            fn default() -> Self {
                <Self as zerocopy::FromZeros>::new_zeroed()
            }
        }

        const _: () = assert!(
            core::mem::size_of::<$name>() == $size,
            concat!("ABI size of ", stringify!($name), " changed")
        );

        impl $crate::layout::AbiLayout for $name {
            const ABI_LAYOUT: $crate::layout::StructLayout = $crate::layout::StructLayout {
                name: stringify!($name),
                size: core::mem::size_of::<$name>(),
                align: core::mem::align_of::<$name>(),
                fields: &[
                    $( $crate::layout::FieldLayout {
                        name: stringify!($field),
                        offset: core::mem::offset_of!($name, $field),
                        size: core::mem::size_of::<$ty>(),
                    }, )*
                ],
            };
        }
    };
}

/// A slice of [`StructLayout`](crate::StructLayout)s for the listed types.
macro_rules! layouts {
    ($($ty:ty),* $(,)?) => {
        &[$(<$ty as $crate::layout::AbiLayout>::ABI_LAYOUT),*]
    };
}

/// Declares ioctl request codes, one request type per code and a descriptor table listing
/// them. `define` entries create a new constant from its direction, number and argument type,
/// and a request type (an uninhabited enum implementing [`Ioctl`](crate::ioctl::Ioctl)) that
/// ties the code to the argument type; `Safe` entries also implement
/// [`SafeIoctl`](crate::ioctl::SafeIoctl), `Unsafe` entries do not. `reuse`
/// entries list a constant and request type of the current generation that another generation
/// shares unchanged.
macro_rules! ioctl_table {
    (
        $(#[$tmeta:meta])*
        pub const $table:ident = {
            define {
                $( $(#[$meta:meta])* $name:ident = $dir:ident($nr:literal, $arg:ty)
                    as $req:ident: $kind:ident; )*
            }
            reuse {
                $( $rname:ident, $rreq:ident; )*
            }
        }
    ) => {
        $(
            $(#[$meta])*
            pub const $name: u32 = $crate::ioctl::$dir::<$arg>($nr);

            #[doc = concat!("[`", stringify!($name), "`] as a type: its request code with its \
                argument type, [`", stringify!($arg), "`].")]
            #[derive(Debug)]
            pub enum $req {}

            impl $crate::ioctl::Ioctl for $req {
                const NAME: &'static str = stringify!($name);
                const REQUEST: u32 = $name;
                const SAFE: bool = ioctl_table!(@safe $kind);
                type Arg = $arg;
            }

            ioctl_table!(@marker $kind $req);
        )*
        $( pub use $crate::{$rname, $rreq}; )*

        $(#[$tmeta])*
        pub const $table: &[$crate::ioctl::IoctlDesc] = &[
            $( $crate::ioctl::IoctlDesc {
                name: stringify!($name),
                request: $name,
                arg: <$arg as $crate::layout::AbiLayout>::ABI_LAYOUT,
                safe: ioctl_table!(@safe $kind),
            }, )*
            $( $crate::ioctl::IoctlDesc {
                name: stringify!($rname),
                request: $crate::$rname,
                arg: <<$crate::$rreq as $crate::ioctl::Ioctl>::Arg as $crate::layout::AbiLayout>::ABI_LAYOUT,
                safe: <$crate::$rreq as $crate::ioctl::Ioctl>::SAFE,
            }, )*
        ];
    };
    (@safe Safe) => { true };
    (@safe Unsafe) => { false };
    (@marker Safe $req:ident) => {
        impl $crate::ioctl::SafeIoctl for $req {}
    };
    (@marker Unsafe $req:ident) => {};
}
