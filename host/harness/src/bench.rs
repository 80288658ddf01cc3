//! What the benchmarks that run the host share: the host as a child
//! process (started, waited for, measured, stopped), its metrics scraped
//! and parsed, and the printed table.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub fn env_num<T: std::str::FromStr>(name: &str) -> Option<T> {
    let v = std::env::var(name).ok().filter(|v| !v.trim().is_empty())?;
    match v.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={v:?} is not a number"),
    }
}

/// Busy loops competing for the CPUs, as a loaded production node would:
/// `n` processes of `yes` writing to /dev/null, each ended after `limit`
/// (by `timeout`) or when this is dropped (SIGTERM, which `timeout` passes
/// on).
pub struct Contention(Vec<Child>);

impl Contention {
    /// `BENCH_CONTENTION` busy loops (default none), for at most `limit`.
    pub fn from_env(limit: Duration) -> Result<Contention> {
        Contention::start(env_num("BENCH_CONTENTION").unwrap_or(0), limit)
    }

    /// `n` busy loops, for at most `limit`.
    pub fn start(n: usize, limit: Duration) -> Result<Contention> {
        let children = (0..n)
            .map(|_| {
                Command::new("timeout")
                    .arg(format!("{}", limit.as_secs().max(1)))
                    .arg("yes")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .context("starting a busy loop (timeout, yes)")
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Contention(children))
    }

    /// How many busy loops run.
    pub fn loops(&self) -> usize {
        self.0.len()
    }
}

impl Drop for Contention {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let _ = child.wait();
        }
    }
}

pub fn free_port() -> Result<SocketAddr> {
    let l = TcpListener::bind("127.0.0.1:0").context("a free port")?;
    Ok(l.local_addr()?)
}

/// utime + stime of a process so far, in seconds, if it can be read.
pub fn cpu_of(pid: Option<u32>) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    // Fields after the command's closing parenthesis start at field 3
    // (state); utime and stime are fields 14 and 15, in clock ticks.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(14 - 3)?.parse().ok()?;
    let stime: f64 = fields.get(15 - 3)?.parse().ok()?;
    Some((utime + stime) / clock_ticks())
}

/// Clock ticks a second (`getconf CLK_TCK`; Linux's USER_HZ is 100).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

pub fn ms(seconds: f64) -> String {
    if seconds < 0.001 {
        format!("{:.1} µs", seconds * 1e6)
    } else {
        format!("{:.3} ms", seconds * 1e3)
    }
}

pub fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

// ---------------------------------------------------------------------------
// The host process

/// A process's resident memory (`/proc/<pid>/status`), in KiB.
#[derive(Clone, Copy, Debug)]
pub struct Memory {
    /// All of it (VmRSS).
    pub rss_kib: u64,
    /// The most it was (VmHWM).
    pub peak_kib: u64,
    /// Anonymous: the heap, stacks, the guests' memories (RssAnon).
    pub anon_kib: u64,
    /// Mapped from files: the binary's and the modules' compiled code as
    /// it is first run, whatever the objects (RssFile).
    pub file_kib: u64,
}

/// `reconciler-host run` for one namespace, its metrics on `addr`, stderr
/// to a log file. Dropping it stops it (SIGTERM, then SIGKILL after 10 s),
/// and prints the log's tail when the bench is failing.
pub struct HostProcess {
    child: Child,
    pub log: PathBuf,
    stopped: Option<ExitStatus>,
}

impl HostProcess {
    /// Starts `reconciler-host` with `args` (global options, `run` and its
    /// options) plus `--metrics-addr <metrics>`, logging at info to `log`.
    pub fn start(
        kubeconfig: &Path,
        log: PathBuf,
        metrics: SocketAddr,
        args: &[&OsStr],
    ) -> Result<HostProcess> {
        Self::start_program(
            &crate::paths::host_binary(),
            &[],
            kubeconfig,
            log,
            metrics,
            args,
        )
    }

    /// [`HostProcess::start`] of another program taking the same arguments
    /// (a bench's own binary standing in for the host), with `env` added.
    pub fn start_program(
        program: &Path,
        env: &[(&str, &str)],
        kubeconfig: &Path,
        log: PathBuf,
        metrics: SocketAddr,
        args: &[&OsStr],
    ) -> Result<HostProcess> {
        let stderr = std::fs::File::create(&log).context("the host's log")?;
        let child = Command::new(program)
            .env_clear()
            .envs(env.iter().copied())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .args(args)
            .args(["--metrics-addr", &metrics.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .context("starting the host")?;
        eprintln!(
            "bench: host pid {}, metrics http://{metrics}/metrics, log {}",
            child.id(),
            log.display()
        );
        Ok(HostProcess {
            child,
            log,
            stopped: None,
        })
    }

    pub async fn wait_synced(&mut self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            if self.log_text().contains("caches synced; reconciling") {
                return Ok(());
            }
            ensure!(
                self.is_alive(),
                "the host exited while starting; log {}",
                self.log.display()
            );
            ensure!(
                Instant::now() < deadline,
                "the host did not sync its caches within {limit:?}; log {}",
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn is_alive(&mut self) -> bool {
        self.stopped.is_none() && matches!(self.child.try_wait(), Ok(None))
    }

    pub fn pid_alive(&self) -> bool {
        self.stopped.is_none()
            && std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
                .is_ok_and(|s| !s.contains(") Z "))
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// WARN and ERROR lines of the log, and any panic of one of its
    /// threads (printed to stderr, not as a log line).
    pub fn problems(&self) -> Vec<String> {
        self.log_text()
            .lines()
            .filter(|l| {
                l.contains(" WARN ") || l.contains(" ERROR ") || l.contains("' panicked at ")
            })
            .map(str::to_owned)
            .collect()
    }

    /// Stops the host (SIGTERM) and says so in `out`: its exit status and
    /// how many problems it logged (the first five on stderr). Whether it
    /// stopped cleanly with nothing to warn about.
    pub fn stop_reported(&mut self, out: &mut Table) -> bool {
        let status = self.stop();
        let problems = self.problems();
        out.row(
            "host stop (SIGTERM) / WARN+ERROR log lines",
            format!("{status} / {}", problems.len()),
        );
        for p in problems.iter().take(5) {
            eprintln!("bench: host log: {p}");
        }
        status.success() && problems.is_empty()
    }

    /// The process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// utime + stime of the process so far, in seconds.
    pub fn cpu(&self) -> Result<f64> {
        cpu_of(Some(self.child.id()))
            .with_context(|| format!("reading /proc/{}/stat", self.child.id()))
    }

    /// Its resident memory now, and at most so far.
    pub fn memory(&self) -> Result<Memory> {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        let field = |name: &str| -> Result<u64> {
            let line = status
                .lines()
                .find(|l| l.starts_with(name))
                .with_context(|| format!("no {name} in {path}"))?;
            Ok(line[name.len()..]
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()?)
        };
        Ok(Memory {
            rss_kib: field("VmRSS:")?,
            peak_kib: field("VmHWM:")?,
            anon_kib: field("RssAnon:")?,
            file_kib: field("RssFile:")?,
        })
    }

    /// SIGTERM, then wait (10 s at most, then SIGKILL).
    pub fn stop(&mut self) -> ExitStatus {
        if let Some(s) = self.stopped {
            return s;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                break s;
            }
            if Instant::now() > deadline {
                eprintln!("bench: the host did not stop within 10 s of SIGTERM; killing it");
                let _ = self.child.kill();
                break self.child.wait().expect("wait");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.stopped = Some(status);
        status
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let failing = self.stopped.is_none();
        let status = self.stop();
        if failing || std::thread::panicking() {
            let text = self.log_text();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(40)..];
            eprintln!(
                "--- host ({status}), log {} (last {} lines):\n{}\n---",
                self.log.display(),
                tail.len(),
                tail.join("\n")
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Metrics: one scrape of the Prometheus text exposition

pub struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

pub struct Metrics {
    samples: Vec<Sample>,
}

/// A histogram summed over its label sets (the kinds).
pub struct Histogram {
    /// (upper bound, cumulative count), ascending; the last is +Inf.
    pub buckets: Vec<(f64, f64)>,
    pub sum: f64,
    pub count: f64,
}

impl Histogram {
    /// The upper bound of the smallest bucket holding quantile `q`.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count <= 0.0 {
            return None;
        }
        let rank = q * self.count;
        self.buckets
            .iter()
            .find(|(_, cumulative)| *cumulative >= rank)
            .map(|(le, _)| *le)
    }
}

impl Metrics {
    pub async fn scrape(addr: SocketAddr) -> Result<Metrics> {
        let limit = Duration::from_secs(10);
        let text = tokio::time::timeout(limit, async {
            let mut s = tokio::net::TcpStream::connect(addr).await?;
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .await?;
            let mut buf = Vec::new();
            s.read_to_end(&mut buf).await?;
            Ok::<_, std::io::Error>(String::from_utf8_lossy(&buf).into_owned())
        })
        .await
        .map_err(|_| anyhow!("scraping http://{addr}/metrics took over {limit:?}"))?
        .with_context(|| format!("scraping http://{addr}/metrics"))?;
        let (head, body) = text
            .split_once("\r\n\r\n")
            .with_context(|| format!("no HTTP response from {addr}: {text:?}"))?;
        ensure!(
            head.starts_with("HTTP/1.1 200"),
            "http://{addr}/metrics answered {}",
            head.lines().next().unwrap_or_default()
        );
        Ok(Metrics {
            samples: body.lines().filter_map(parse_sample).collect(),
        })
    }

    /// The sum of a metric over its label sets (0 when absent).
    pub fn counter(&self, name: &str) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.value)
            .fold(0.0, |a, b| a + b)
    }

    /// A metric's value per set of the labels `keys` (their values, in
    /// that order), summed over its other labels.
    pub fn by_labels(&self, name: &str, keys: &[&str]) -> BTreeMap<Vec<String>, f64> {
        let mut out = BTreeMap::new();
        for s in self.samples.iter().filter(|s| s.name == name) {
            let key = keys
                .iter()
                .map(|k| s.labels.get(*k).cloned().unwrap_or_default())
                .collect();
            *out.entry(key).or_insert(0.0) += s.value;
        }
        out
    }

    pub fn histogram(&self, name: &str) -> Histogram {
        let mut buckets: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for s in self
            .samples
            .iter()
            .filter(|s| s.name == format!("{name}_bucket"))
        {
            let le = match s.labels.get("le").map(String::as_str) {
                Some("+Inf") => f64::INFINITY,
                Some(v) => v.parse().unwrap_or(f64::NAN),
                None => continue,
            };
            if le.is_nan() {
                continue;
            }
            // Ordered by the bound (non-negative floats order as their bits).
            buckets.entry(le.to_bits()).or_insert((le, 0.0)).1 += s.value;
        }
        Histogram {
            buckets: buckets.into_values().collect(),
            sum: self.counter(&format!("{name}_sum")),
            count: self.counter(&format!("{name}_count")),
        }
    }
}

/// `name{k="v",...} value` or `name value`; comments and blanks are None.
fn parse_sample(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (series, value) = line.rsplit_once(' ')?;
    let value: f64 = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    let (name, labels) = match series.split_once('{') {
        None => (series.to_owned(), BTreeMap::new()),
        Some((name, rest)) => (name.to_owned(), parse_labels(rest.strip_suffix('}')?)?),
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}

fn parse_labels(s: &str) -> Option<BTreeMap<String, String>> {
    let mut labels = BTreeMap::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek() == Some(&',') || chars.peek() == Some(&' ') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Some(labels);
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if chars.next()? != '"' {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()? {
                '\\' => match chars.next()? {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                '"' => break,
                c => value.push(c),
            }
        }
        labels.insert(key.trim().to_owned(), value);
    }
}

// ---------------------------------------------------------------------------
// The printed table

#[derive(Default)]
pub struct Table {
    text: String,
}

impl Table {
    pub fn title(&mut self, t: String) {
        self.text.insert_str(0, &format!("\n== {t}\n"));
    }
    pub fn section(&mut self, s: &str) {
        self.text.push_str(&format!("-- {s}\n"));
    }
    pub fn row(&mut self, label: &str, value: impl std::fmt::Display) {
        self.text.push_str(&format!("  {label:<58} {value}\n"));
    }
    pub fn finish(self) -> String {
        self.text
    }
}
