//! Fault injection: make the modelled GPU misbehave on purpose, to watch how the driver
//! responds — the failure paths a real driver must survive and that are hard to reach on real
//! hardware.
//!
//! Faults are injected per GPU with [`crate::Model::inject_fault`], for every GPU of a model
//! with [`crate::ModelConfig::with_fault`], or from the environment with
//! [`crate::ModelConfig::with_env_faults`], which reads `KFD_MODEL_FAULTS`, a comma-separated
//! list such as
//!
//! ```text
//! KFD_MODEL_FAULTS="scheduler-hang"
//! KFD_MODEL_FAULTS="lose-interrupts=2,delay-interrupts=5ms,slow-engine=100us"
//! KFD_MODEL_FAULTS="vm-fault=0x7f0000000000+0x1000,unpreemptible=0x1002,hiq-full"
//! ```
//!
//! | fault | what the hardware does | what the driver does |
//! |---|---|---|
//! | `scheduler-hang` | the HWS stops reading the HIQ: no preemption fence | `ETIME`, then `EIO` until a GPU reset |
//! | `unpreemptible=DOORBELL` | that queue does not leave its HQD on UNMAP | 6.1: hang; 6.12: the queue is reset (`EACCES` on updates) |
//! | `hiq-full` | the HIQ has no room | the ioctl that needs the scheduler fails with `ENOMEM` |
//! | `lose-interrupts=N` | the next N interrupts never arrive | events stay unsignalled (a later interrupt's slot scan may find them) |
//! | `lose-every-interrupt=N` | every N-th interrupt is lost | as above |
//! | `delay-interrupts=T` | interrupts reach the driver T late | waits complete late |
//! | `slow-engine=T` | each user-queue packet takes T | work completes late; the driver is not blocked |
//! | `vm-fault=VA+LEN` | every engine access to the range faults | memory-exception events, the process's queues evicted |

use crate::device::Gpu;
use crate::hw::ih::IhFaults;
use std::str::FromStr;
use std::time::Duration;

/// The environment variable [`crate::ModelConfig::with_env_faults`] reads.
pub const FAULTS_ENV: &str = "KFD_MODEL_FAULTS";

/// One injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The scheduler firmware stops answering the HIQ (no QUERY_STATUS fence).
    SchedulerHang,
    /// The queue with this doorbell (BAR dword index) will not preempt.
    Unpreemptible {
        /// Doorbell dword index, as MAP_QUEUES carries it.
        doorbell_offset: u32,
    },
    /// The HIQ is full: the driver cannot write scheduler packets.
    HiqFull,
    /// The next this many interrupts are lost.
    LoseInterrupts(u32),
    /// Every n-th interrupt is lost.
    LoseEveryInterrupt(u32),
    /// Interrupts reach the driver this late.
    DelayInterrupts(Duration),
    /// Each user-queue packet takes at least this long.
    SlowEngine(Duration),
    /// Every engine access to `[va, va+len)` faults.
    VmFault {
        /// First address.
        va: u64,
        /// Bytes.
        len: u64,
    },
}

impl Fault {
    /// Applies the fault to a GPU (adding to the faults it has).
    pub fn apply(&self, gpu: &Gpu) {
        let mut hws = gpu.hws.faults();
        let mut ih: IhFaults = gpu.ih.faults();
        match *self {
            Fault::SchedulerHang => hws.hang = true,
            Fault::Unpreemptible { doorbell_offset } => {
                hws.unpreemptible_doorbell = Some(doorbell_offset)
            }
            Fault::HiqFull => hws.hiq_full = true,
            Fault::LoseInterrupts(n) => ih.drop_next = ih.drop_next.saturating_add(n),
            Fault::LoseEveryInterrupt(n) => ih.drop_every = Some(n.max(1)),
            Fault::DelayInterrupts(d) => ih.delay = Some(d),
            Fault::SlowEngine(d) => hws.packet_delay = Some(d),
            Fault::VmFault { va, len } => gpu.inject_vm_fault(va, len),
        }
        gpu.hws.set_faults(hws);
        gpu.ih.set_faults(ih);
        log::warn!(target: crate::layer::FAULTS, "injected: {self}");
    }

    /// Parses a comma-separated list (the `KFD_MODEL_FAULTS` syntax).
    pub fn parse_list(s: &str) -> Result<Vec<Fault>, String> {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::parse)
            .collect()
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::SchedulerHang => write!(f, "scheduler-hang"),
            Fault::Unpreemptible { doorbell_offset } => {
                write!(f, "unpreemptible={doorbell_offset:#x}")
            }
            Fault::HiqFull => write!(f, "hiq-full"),
            Fault::LoseInterrupts(n) => write!(f, "lose-interrupts={n}"),
            Fault::LoseEveryInterrupt(n) => write!(f, "lose-every-interrupt={n}"),
            Fault::DelayInterrupts(d) => write!(f, "delay-interrupts={}us", d.as_micros()),
            Fault::SlowEngine(d) => write!(f, "slow-engine={}us", d.as_micros()),
            Fault::VmFault { va, len } => write!(f, "vm-fault={va:#x}+{len:#x}"),
        }
    }
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    };
    r.map_err(|_| format!("'{s}' is not a number (decimal or 0x-hex)"))
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = t
        .find(|c: char| !c.is_ascii_digit())
        .map_or((t, "ms"), |i| t.split_at(i));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration such as 500us, 5ms or 1s"))?;
    match unit {
        "us" => Ok(Duration::from_micros(n)),
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        _ => Err(format!("'{s}': the unit must be us, ms or s")),
    }
}

impl FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, value) = match s.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (s.trim(), None),
        };
        let need = |what: &str| value.ok_or_else(|| format!("fault '{name}' needs ={what}"));
        Ok(match name {
            "scheduler-hang" => Fault::SchedulerHang,
            "hiq-full" => Fault::HiqFull,
            "unpreemptible" => Fault::Unpreemptible {
                doorbell_offset: u32::try_from(parse_u64(need("DOORBELL")?)?)
                    .map_err(|_| "the doorbell offset must fit 32 bits".to_owned())?,
            },
            "lose-interrupts" => Fault::LoseInterrupts(
                u32::try_from(parse_u64(need("N")?)?).map_err(|_| "N is too large".to_owned())?,
            ),
            "lose-every-interrupt" => {
                let n = parse_u64(need("N")?)?;
                if n == 0 || n > u64::from(u32::MAX) {
                    return Err("lose-every-interrupt needs N from 1 to 2^32-1".into());
                }
                Fault::LoseEveryInterrupt(n as u32)
            }
            "delay-interrupts" => Fault::DelayInterrupts(parse_duration(need("TIME")?)?),
            "slow-engine" => Fault::SlowEngine(parse_duration(need("TIME")?)?),
            "vm-fault" => {
                let v = need("VA+LEN")?;
                let (va, len) = v.split_once('+').ok_or_else(|| {
                    format!("vm-fault={v}: write it as VA+LEN, e.g. 0x10000+0x1000")
                })?;
                Fault::VmFault {
                    va: parse_u64(va)?,
                    len: parse_u64(len)?,
                }
            }
            other => {
                return Err(format!(
                    "unknown fault '{other}'; choose from scheduler-hang, unpreemptible=DOORBELL, \
                     hiq-full, lose-interrupts=N, lose-every-interrupt=N, delay-interrupts=TIME, \
                     slow-engine=TIME, vm-fault=VA+LEN"
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_syntax_round_trips() {
        let list = Fault::parse_list(
            "scheduler-hang, lose-interrupts=2,delay-interrupts=5ms,slow-engine=100us,\
             vm-fault=0x7f00_0000_0000+0x1000,unpreemptible=0x1002,hiq-full,lose-every-interrupt=3",
        )
        .unwrap();
        assert_eq!(
            list,
            [
                Fault::SchedulerHang,
                Fault::LoseInterrupts(2),
                Fault::DelayInterrupts(Duration::from_millis(5)),
                Fault::SlowEngine(Duration::from_micros(100)),
                Fault::VmFault {
                    va: 0x7f00_0000_0000,
                    len: 0x1000
                },
                Fault::Unpreemptible {
                    doorbell_offset: 0x1002
                },
                Fault::HiqFull,
                Fault::LoseEveryInterrupt(3),
            ]
        );
        for f in &list {
            assert_eq!(f.to_string().parse::<Fault>().as_ref(), Ok(f));
        }
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        assert!(Fault::parse_list("melt-gpu")
            .unwrap_err()
            .contains("unknown fault"));
        assert!(Fault::parse_list("slow-engine=5h")
            .unwrap_err()
            .contains("unit"));
        assert!(Fault::parse_list("vm-fault=0x1000")
            .unwrap_err()
            .contains("VA+LEN"));
        assert!(Fault::parse_list("lose-interrupts")
            .unwrap_err()
            .contains("needs"));
        assert!(Fault::parse_list("lose-every-interrupt=0").is_err());
        assert_eq!(Fault::parse_list(""), Ok(vec![]));
    }
}
