//! C++ names of kernels and device functions: the Itanium-mangled symbol (`_Z7bitonicIiEvPT_i`)
//! shown demangled as `llvm-objdump -C` and `c++filt` show it (`void bitonic<int>(int*, int)`),
//! and looked up by any of its spellings (`--kernel 'bitonic<int>'`).
//!
//! The demangling is `cpp_demangle`'s: the Itanium C++ ABI's grammar is large (templates,
//! substitutions, lambdas, expressions) and that crate is fuzzed against it and bounds its
//! recursion on hostile input; a hand-written subset would miss names real HIP code has.

use cpp_demangle::{DemangleOptions, Symbol};

fn demangle_with(name: &str, options: &DemangleOptions) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    let symbol = Symbol::new(name.as_bytes()).ok()?;
    symbol
        .demangle_with_options(options)
        .ok()
        .filter(|d| !d.is_empty())
}

/// The demangled name (`void bitonic<int>(int*, int)`); `None` for a name that is not a
/// mangled C++ name (`vadd`, an OpenCL kernel) or does not demangle.
pub fn demangle(name: &str) -> Option<String> {
    demangle_with(name, &DemangleOptions::new())
}

/// The demangled name without return type and parameters (`bitonic<int>`), the short form a
/// user types.
pub fn short(name: &str) -> Option<String> {
    demangle_with(name, &DemangleOptions::new().no_params().no_return_type())
}

/// `name` as shown: demangled when `demangled` is asked and it demangles.
pub fn shown(name: &str, demangled: bool) -> String {
    match demangled.then(|| demangle(name)).flatten() {
        Some(d) => d,
        None => name.to_owned(),
    }
}

/// Whether `query` names the symbol `mangled` (whose metadata may give `meta` as its name):
/// the mangled name, the metadata name, the demangled name, or its short form.
pub fn matches(query: &str, mangled: &str, meta: Option<&str>) -> bool {
    let query = query.trim();
    query == mangled
        || meta == Some(query)
        || demangle(mangled).is_some_and(|d| d == query)
        || short(mangled).is_some_and(|s| s == query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_and_plain_names() {
        // What llvm-cxxfilt-15 prints for the same symbols.
        assert_eq!(
            demangle("_Z7bitonicIiEvPT_i").as_deref(),
            Some("void bitonic<int>(int*, int)")
        );
        assert_eq!(demangle("_Z8helper_ai").as_deref(), Some("helper_a(int)"));
        assert_eq!(short("_Z7bitonicIiEvPT_i").as_deref(), Some("bitonic<int>"));
        assert_eq!(demangle("vadd"), None);
        assert_eq!(demangle("_Z"), None);
        assert_eq!(shown("vadd", true), "vadd");
        assert_eq!(shown("_Z8helper_ai", false), "_Z8helper_ai");
        assert!(matches("bitonic<int>", "_Z7bitonicIiEvPT_i", None));
        assert!(matches(
            "void bitonic<int>(int*, int)",
            "_Z7bitonicIiEvPT_i",
            None
        ));
        assert!(!matches("bitonic<float>", "_Z7bitonicIiEvPT_i", None));
        assert!(matches("k", "k", Some("k")));
    }
}
