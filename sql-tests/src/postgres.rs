//! A throw-away PostgreSQL server for differential tests: `initdb` into a temporary
//! directory, started with `pg_ctl` on a free port (as user `postgres` when running as
//! root, since PostgreSQL refuses to run as root), stopped and removed on drop.

use std::path::PathBuf;
use std::process::Command;

/// A running PostgreSQL server.
pub struct PgServer {
    bindir: PathBuf,
    data: PathBuf,
    /// Port it listens on (127.0.0.1).
    pub port: u16,
    as_postgres: bool,
    _tmp: tempfile::TempDir,
}

fn newest_bindir() -> Result<PathBuf, String> {
    let root = PathBuf::from("/usr/lib/postgresql");
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(&root)
        .map_err(|e| {
            format!(
                "PostgreSQL is not installed ({}: {e}); .ci/run installs it",
                root.display()
            )
        })?
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, p)| p)
        .ok_or_else(|| "no PostgreSQL server binaries under /usr/lib/postgresql".into())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(54329)
}

impl PgServer {
    /// Initialise and start a server.
    pub fn start() -> Result<PgServer, String> {
        let bindir = newest_bindir()?;
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let data = tmp.path().join("pg");
        std::fs::create_dir(&data).map_err(|e| e.to_string())?;
        // Root or not, asked of `id -u`: the workspace forbids unsafe code (geteuid).
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        if root {
            for p in [tmp.path(), data.as_path()] {
                let st = Command::new("chown")
                    .arg("postgres:postgres")
                    .arg(p)
                    .status()
                    .map_err(|e| e.to_string())?;
                if !st.success() {
                    return Err(format!("chown postgres {} failed", p.display()));
                }
            }
        }
        let port = free_port();
        let server = PgServer {
            bindir,
            data,
            port,
            as_postgres: root,
            _tmp: tmp,
        };
        server.run(
            "initdb",
            &["-D", &server.data_str(), "-A", "trust", "-U", "postgres"],
        )?;
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            server.data_str()
        );
        let log = server.data.join("log");
        server.run(
            "pg_ctl",
            &[
                "-D",
                &server.data_str(),
                "-l",
                &log.to_string_lossy(),
                "-w",
                "-o",
                &opts,
                "start",
            ],
        )?;
        Ok(server)
    }

    fn data_str(&self) -> String {
        self.data.to_string_lossy().into_owned()
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bindir.join(tool);
        let out = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&exe)
                .args(args)
                .output()
        } else {
            Command::new(&exe).args(args).output()
        }
        .map_err(|e| format!("{tool}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{tool} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// Connection string for database `postgres`.
    pub fn conn_str(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self.run(
            "pg_ctl",
            &["-D", &self.data_str(), "-m", "immediate", "stop"],
        );
    }
}
