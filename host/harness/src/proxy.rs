//! A fault-injecting loopback proxy in front of the test API server: a
//! stable address the host connects to (TLS passes through untouched, so
//! the server's certificate still verifies), whose faults a test turns on
//! and off: an outage (every connection cut, new ones refused), added
//! latency, and a backend that moves (the API server restarted on another
//! port).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The faults in force.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Faults {
    /// Connections cut and refused.
    down: bool,
    /// Added before each chunk is forwarded, either way.
    latency: Duration,
}

struct State {
    backend: SocketAddr,
    faults: Faults,
}

/// The proxy; dropped, it stops accepting and cuts every connection.
pub struct FaultProxy {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    /// Bumped on every fault change: live connections re-check.
    generation: watch::Sender<u64>,
    accept: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// Listens on a free loopback port, forwarding to `backend`.
    pub async fn start(backend: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            backend,
            faults: Faults::default(),
        }));
        let (generation, _) = watch::channel(0u64);
        let accept = {
            let state = state.clone();
            let generation = generation.clone();
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let (backend, faults) = {
                        let s = state.lock().expect("proxy state");
                        (s.backend, s.faults)
                    };
                    if faults.down {
                        drop(client);
                        continue;
                    }
                    let changed = generation.subscribe();
                    let state = state.clone();
                    tokio::spawn(async move {
                        let Ok(server) = TcpStream::connect(backend).await else {
                            return;
                        };
                        pipe(client, server, state, changed).await;
                    });
                }
            })
        };
        Ok(FaultProxy {
            addr,
            state,
            generation,
            accept,
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn change(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.state.lock().expect("proxy state"));
        self.generation.send_modify(|g| *g += 1);
    }

    /// An outage: every connection cut, new ones refused, until [`up`].
    ///
    /// [`up`]: Self::up
    pub fn down(&self) {
        self.change(|s| s.faults.down = true);
    }

    /// Connections accepted again.
    pub fn up(&self) {
        self.change(|s| s.faults.down = false);
    }

    /// Adds `latency` to every forwarded chunk, either way.
    pub fn set_latency(&self, latency: Duration) {
        self.change(|s| s.faults.latency = latency);
    }

    /// Forwards new connections to `backend` (the server moved); live
    /// connections are cut.
    pub fn set_backend(&self, backend: SocketAddr) {
        self.change(|s| s.backend = backend);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.change(|s| s.faults.down = true);
    }
}

/// Copies both ways until either side closes, the proxy goes down, or the
/// backend moves.
async fn pipe(
    client: TcpStream,
    server: TcpStream,
    state: Arc<Mutex<State>>,
    mut changed: watch::Receiver<u64>,
) {
    let backend = server.peer_addr().ok();
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let latency = |state: &Arc<Mutex<State>>| state.lock().expect("proxy state").faults.latency;
    let up = {
        let state = state.clone();
        async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                let n = match cr.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let delay = latency(&state);
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if sw.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    };
    let down = {
        let state = state.clone();
        async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                let n = match sr.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let delay = latency(&state);
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if cw.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    };
    let cut = async move {
        loop {
            if changed.changed().await.is_err() {
                return;
            }
            let s = state.lock().expect("proxy state");
            if s.faults.down || Some(s.backend) != backend {
                return;
            }
        }
    };
    tokio::select! {
        () = up => {}
        () = down => {}
        () = cut => {}
    }
}

/// A kube-apiserver of the test's own (`tests/apiserver/up`), which a test
/// may stop and start again on the same data (and CA), behind a
/// [`FaultProxy`] so the host's address stays the same.
pub struct RestartableServer {
    dir: PathBuf,
    script_dir: PathBuf,
    /// Extra kube-apiserver flags (`APISERVER_ARGS`).
    args: String,
}

impl RestartableServer {
    /// Starts a server with its data in `dir`.
    pub fn start(dir: &Path) -> anyhow::Result<Self> {
        Self::start_with(dir, "")
    }

    /// The same, with extra kube-apiserver flags (space-separated).
    pub fn start_with(dir: &Path, args: &str) -> anyhow::Result<Self> {
        let server = RestartableServer {
            dir: dir.to_path_buf(),
            script_dir: crate::paths::workspace().join("tests/apiserver"),
            args: args.to_owned(),
        };
        server.up()?;
        Ok(server)
    }

    fn script(&self, name: &str) -> anyhow::Result<()> {
        let status = std::process::Command::new("bash")
            .arg(self.script_dir.join(name))
            .env("APISERVER_DIR", &self.dir)
            .env("APISERVER_ARGS", &self.args)
            // A graceful stop waits for long watches; five seconds, then
            // SIGKILL (a crash is as good a restart for these tests).
            .env("APISERVER_STOP_TIMEOUT", "5")
            .env("APISERVER_WATCH_PID", std::process::id().to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "tests/apiserver/{name} failed ({status})");
        Ok(())
    }

    /// Starts it (again).
    pub fn up(&self) -> anyhow::Result<()> {
        self.script("up")
    }

    /// Stops it (SIGTERM), keeping its data.
    pub fn down(&self) -> anyhow::Result<()> {
        self.script("down")
    }

    /// Its address now (a new port after every start).
    pub fn addr(&self) -> anyhow::Result<SocketAddr> {
        let url = std::fs::read_to_string(self.dir.join("ready"))?;
        let hostport = url
            .trim()
            .strip_prefix("https://")
            .ok_or_else(|| anyhow::anyhow!("unexpected server URL {url}"))?;
        Ok(hostport.parse()?)
    }

    /// Its admin kubeconfig.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// An admin client of it as it runs now (a new port after a restart:
    /// ask again).
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        let kubeconfig = kube::config::Kubeconfig::read_from(self.kubeconfig())?;
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
        Ok(kube::Client::try_from(config)?)
    }

    /// A copy of its admin kubeconfig pointing at `addr` (the proxy).
    pub fn kubeconfig_via(&self, addr: SocketAddr, path: &Path) -> anyhow::Result<PathBuf> {
        let text = std::fs::read_to_string(self.kubeconfig())?;
        let current = self.addr()?;
        let text = text.replace(&format!("https://{current}"), &format!("https://{addr}"));
        std::fs::write(path, text)?;
        Ok(path.to_path_buf())
    }
}

impl Drop for RestartableServer {
    fn drop(&mut self) {
        let _ = self.down();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
