//! Walks the ABI tables `kfd-sys` publishes: which commands changed between the 1.8
//! generation Debian's libhsakmt speaks and the current interface, and how a request code
//! decodes into the number, direction and size amdkfd's dispatcher uses.

use kfd_sys::{ioctl, v1_8, AMDKFD_IOCTLS};

fn main() {
    println!("commands whose request code differs between 1.8 and 1.18:");
    for old in v1_8::AMDKFD_IOCTLS {
        match ioctl::find_by_nr(AMDKFD_IOCTLS, old.nr()) {
            Some(new) if new.request != old.request => println!(
                "  {:#04x} {:<28} {:#010x} ({} B) -> {:#010x} ({} B)",
                old.nr(),
                old.name,
                old.request,
                old.size(),
                new.request,
                new.size()
            ),
            Some(_) => {}
            None => println!(
                "  {:#04x} {:<28} {:#010x} DKMS only",
                old.nr(),
                old.name,
                old.request
            ),
        }
    }
    let cmd = kfd_sys::AMDKFD_IOC_WAIT_EVENTS;
    println!(
        "\n{cmd:#010x} decodes to nr {:#04x}, type '{}', dir {}, size {}",
        ioctl::ioc_nr(cmd),
        char::from(ioctl::ioc_type(cmd) as u8),
        ioctl::ioc_dir(cmd),
        ioctl::ioc_size(cmd)
    );
}
