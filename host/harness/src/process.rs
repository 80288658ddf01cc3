//! A child process stopped as a user stops a host: SIGTERM, then SIGKILL
//! if it has not stopped within 10 s.

use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How long a process may take to stop after SIGTERM.
const STOP_WITHIN: Duration = Duration::from_secs(10);

/// SIGTERM to `child`, then its exit status once it stopped (SIGKILL after
/// [`STOP_WITHIN`]; `killed` is told when it came to that).
pub fn terminate(child: &mut Child, killed: impl FnOnce()) -> ExitStatus {
    if let Ok(Some(s)) = child.try_wait() {
        return s;
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + STOP_WITHIN;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return s;
        }
        if Instant::now() > deadline {
            killed();
            let _ = child.kill();
            return child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
