//! Numbers for people: sizes in binary units, durations with a unit that keeps three
//! significant digits, throughput in GB/s (10⁹ bytes per second, as the targets are stated).

use std::time::Duration;

/// `bytes` in the largest binary unit that divides it exactly, else with one decimal:
/// `4 KiB`, `16 GiB`, `1.5 MiB`, `100 B`.
pub fn bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = 0;
    let mut exact = bytes;
    while unit + 1 < UNITS.len() && exact >= 1024 && exact % 1024 == 0 {
        exact /= 1024;
        unit += 1;
    }
    if exact < 1024 || unit + 1 == UNITS.len() {
        return format!("{exact} {}", UNITS[unit]);
    }
    // Not a whole number of any larger unit: one decimal in the largest that fits.
    let mut value = bytes as f64;
    let mut unit = 0;
    while unit + 1 < UNITS.len() && value >= 1024.0 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A size in KiB as [`bytes`] prints it.
pub fn kib(kib: u64) -> String {
    bytes(kib.saturating_mul(1024))
}

/// A duration with three significant digits: `850 ns`, `1.23 µs`, `45.6 ms`, `2.00 s`.
pub fn duration(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    if unit == "ns" {
        return format!("{value:.0} ns");
    }
    let decimals = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$} {unit}")
}

/// Nanoseconds as [`duration`] prints them (fractions of a nanosecond get one decimal).
pub fn nanos(ns: f64) -> String {
    if ns.is_nan() {
        return "-".into();
    }
    if ns < 0.0 {
        return format!("-{}", nanos(-ns));
    }
    if ns < 10.0 {
        format!("{ns:.1} ns")
    } else {
        duration(Duration::from_nanos(ns.round() as u64))
    }
}

/// `bytes` moved in `elapsed`, in GB/s.
pub fn gb_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / elapsed.as_secs_f64().max(1e-12) / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_exact_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(100), "100 B");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(16 << 30), "16 GiB");
        assert_eq!(bytes(1536 << 10), "1.5 MiB");
        assert_eq!(bytes(1025), "1.0 KiB");
        assert_eq!(kib(4096), "4 MiB");
        assert_eq!(bytes(u64::MAX), "16384.0 PiB");
    }

    #[test]
    fn durations_keep_three_digits() {
        assert_eq!(duration(Duration::from_nanos(850)), "850 ns");
        assert_eq!(duration(Duration::from_nanos(1234)), "1.23 µs");
        assert_eq!(duration(Duration::from_micros(45_600)), "45.6 ms");
        assert_eq!(duration(Duration::from_secs(2)), "2.00 s");
        assert_eq!(duration(Duration::from_micros(150)), "150 µs");
        assert_eq!(nanos(3.3), "3.3 ns");
        assert_eq!(nanos(1500.0), "1.50 µs");
        assert_eq!(nanos(-69.0), "-69 ns");
        assert_eq!(nanos(f64::NAN), "-");
        assert!((gb_per_s(2_000_000_000, Duration::from_secs(1)) - 2.0).abs() < 1e-9);
    }
}
