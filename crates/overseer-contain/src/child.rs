//! What a child process is set up with between fork and exec, shared by
//! everything here that spawns (agents, sensors, the network helper).

use tokio::process::Command;

/// The child keeps `fds` (made close-on-exec by the engine) across its
/// exec: what a helper is told to use by number.
#[allow(unsafe_code)]
pub fn keep_fds(cmd: &mut Command, fds: Vec<i32>) {
    // SAFETY: the closure runs in the forked child before exec and makes
    // async-signal-safe system calls (fcntl) on descriptors the parent keeps
    // open until spawn returns; it allocates nothing (it reads the vector
    // made in the parent).
    unsafe {
        cmd.pre_exec(move || {
            for fd in &fds {
                let fd = std::os::fd::BorrowedFd::borrow_raw(*fd);
                rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())
                    .map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
}

/// The agent gets SIGKILL when the engine dies, even by kill -9. The
/// kernel's "parent" is the thread that forks: start such a command with
/// [`crate::launcher::spawn`], never on a thread that may exit.
#[allow(unsafe_code)]
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and only makes
    // one async-signal-safe system call (prctl); it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
}
