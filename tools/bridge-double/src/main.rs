//! cursor-sdk-bridge-double: a conformance double of cursor-sdk-bridge (test support only).
//!
//! Serves `sdk.v1` over Connect/HTTP/1.1 like the real bridge, with scripted model turns (see README.md).

#[allow(dead_code, clippy::all)]
mod proto {
    include!(concat!(env!("OUT_DIR"), "/sdk.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/sdk.v1.serde.rs"));
}

mod connect;
mod http;
mod runs;
mod scenarios;
mod service;
mod store;
mod util;

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

const HELP: &str = "Usage: cursor-sdk-bridge-double [options]\n\
       cursor-sdk-bridge-double call --url URL --token TOKEN --service tool|store (--json BODY | --raw-file F | --raw-request F)\n\n\
A conformance double of cursor-sdk-bridge (protocol sdk.v1) for tests.\n\n\
Options:\n\
  --workspace <dir>                 Launch workspace (default: current directory)\n\
  --host <host>                     127.0.0.1 (default), localhost or ::1\n\
  --port <port>                     TCP port (0 = ephemeral, default)\n\
  --verbose                         Log each request on stderr\n\
  --local-store <json>              {\"type\":\"custom\"} forwards agent CRUD to the store callback\n\
  --store-callback-url <url>        Host store callback server\n\
  --store-callback-auth-token <t>   Bearer token for the store callback\n\
  --tool-callback-url <url>         Host custom-tool callback server\n\
  --tool-callback-auth-token <t>    Bearer token for the tool callback\n\
  --state-root <dir>                Echoed in the ready line (nothing is written)\n\
  --max-concurrent-agents <n>       Accepted, echoed in the ready line\n\
  --max-message-bytes <n>           Accepted, echoed in the ready line\n\
  -h, --help                        Show this help\n\n\
Environment: CURSOR_SDK_DOUBLE_SCENARIO, CURSOR_SDK_DOUBLE_KEEPALIVE_MS, CURSOR_SDK_DOUBLE_OFFLINE_MS,\n\
CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON, CURSOR_SDK_STORE_CALLBACK_URL/_AUTH_TOKEN, CURSOR_SDK_TOOL_CALLBACK_URL/_AUTH_TOKEN.\n";

static TOKEN_DIR: OnceLock<String> = OnceLock::new();
static VERBOSE: OnceLock<bool> = OnceLock::new();

fn fail(msg: &str) -> ! {
    eprintln!("cursor-sdk-bridge failed: Error: {msg}");
    std::process::exit(1);
}

#[derive(Default)]
struct Args {
    workspace: Option<String>,
    host: Option<String>,
    port: Option<String>,
    verbose: bool,
    local_store: Option<String>,
    store_url: Option<String>,
    store_token: Option<String>,
    tool_url: Option<String>,
    tool_token: Option<String>,
    state_root: Option<String>,
    max_agents: Option<String>,
    max_bytes: Option<String>,
}

fn parse_args(argv: &[String]) -> Args {
    let mut a = Args::default();
    let mut i = 0;
    while i < argv.len() {
        let flag = argv[i].as_str();
        if flag == "-h" || flag == "--help" {
            print!("{HELP}");
            std::process::exit(0);
        }
        if flag == "--verbose" {
            a.verbose = true;
            i += 1;
            continue;
        }
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (flag, None),
        };
        let slot = match name {
            "--workspace" => &mut a.workspace,
            "--host" => &mut a.host,
            "--port" => &mut a.port,
            "--local-store" => &mut a.local_store,
            "--store-callback-url" => &mut a.store_url,
            "--store-callback-auth-token" => &mut a.store_token,
            "--tool-callback-url" => &mut a.tool_url,
            "--tool-callback-auth-token" => &mut a.tool_token,
            "--state-root" => &mut a.state_root,
            "--max-concurrent-agents" => &mut a.max_agents,
            "--max-message-bytes" => &mut a.max_bytes,
            _ => fail(&format!("Unknown argument: {flag}")),
        };
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                argv.get(i)
                    .cloned()
                    .unwrap_or_else(|| fail(&format!("Missing value for {name}")))
            }
        };
        *slot = Some(value);
        i += 1;
    }
    a
}

/// JS `parseInt`-like: the leading digits.
fn parse_port(s: &str) -> Option<u16> {
    let digits: String = s.trim().chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse::<u32>().ok().filter(|p| *p <= 65535).map(|p| p as u16)
}

fn make_token_file() -> (String, String) {
    let tmp = std::env::var("TMPDIR")
        .ok()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "/tmp".into());
    let template = format!("{}/cursor-sdk-bridge-XXXXXX\0", tmp.trim_end_matches('/'));
    let mut buf = template.into_bytes();
    // SAFETY: buf is a NUL-terminated, writable template as mkdtemp requires.
    let p = unsafe { libc::mkdtemp(buf.as_mut_ptr() as *mut libc::c_char) };
    if p.is_null() {
        fail(&format!("mkdtemp failed: {}", std::io::Error::last_os_error()));
    }
    buf.pop();
    let dir = String::from_utf8(buf).expect("utf8 dir");
    let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    let token = util::b64url(&util::random_bytes(32));
    let file = format!("{dir}/auth-token");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode_0600()
        .open(&file)
        .unwrap_or_else(|e| fail(&format!("cannot write token file: {e}")));
    f.write_all(token.as_bytes()).expect("write token");
    (dir, token)
}

trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}
impl Mode0600 for std::fs::OpenOptions {
    fn mode_0600(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.mode(0o600)
    }
}

fn cleanup_and_exit(code: i32) -> ! {
    if let Some(d) = TOKEN_DIR.get() {
        let _ = std::fs::remove_dir_all(d);
    }
    std::process::exit(code);
}

/// Blocks SIGTERM/SIGINT in every thread and handles them on a dedicated one.
fn install_signals() {
    // SAFETY: plain libc signal-mask calls on valid, initialised sigset_t values.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        std::thread::spawn(move || {
            let mut sig: libc::c_int = 0;
            libc::sigwait(&set, &mut sig);
            let name = if sig == libc::SIGINT { "SIGINT" } else { "SIGTERM" };
            eprintln!("cursor-sdk-bridge {name} received, shutting down");
            cleanup_and_exit(0);
        });
    }
}

/// Called after a Shutdown response was written.
pub fn shutdown_soon(body: &[u8], codec: connect::Codec) {
    let grace = codec
        .decode::<proto::ShutdownRequest>(body, "sdk.v1.ShutdownRequest")
        .map(|r| r.grace_seconds)
        .unwrap_or(0);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20) + Duration::from_secs(grace as u64));
        cleanup_and_exit(0);
    });
}

fn serve_conn(svc: Arc<service::Svc>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(6)));
    let Ok(mut w) = stream.try_clone() else { return };
    let mut r = BufReader::with_capacity(64 * 1024, stream);
    loop {
        match http::read_request(&mut r) {
            Ok(http::ReadOutcome::Request(req)) => {
                if *VERBOSE.get().unwrap_or(&false) {
                    eprintln!(
                        "cursor-sdk-bridge-double {} {} ({} bytes)",
                        req.method,
                        req.path,
                        req.body.len()
                    );
                }
                match svc.handle(req, &mut w) {
                    Ok(true) => continue,
                    _ => break,
                }
            }
            Ok(http::ReadOutcome::Bad) => {
                let _ = w.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
                break;
            }
            Ok(http::ReadOutcome::Closed) | Err(_) => break,
        }
    }
    let _ = w.shutdown(std::net::Shutdown::Both);
}

fn call_main(argv: &[String]) -> ! {
    let mut url = None;
    let mut token = String::new();
    let mut service = "tool".to_string();
    let mut body: Option<Vec<u8>> = None;
    let mut raw_request: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < argv.len() {
        let v = argv
            .get(i + 1)
            .cloned()
            .unwrap_or_else(|| fail(&format!("Missing value for {}", argv[i])));
        match argv[i].as_str() {
            "--url" => url = Some(v),
            "--token" => token = v,
            "--service" => service = v,
            "--json" => body = Some(v.into_bytes()),
            "--raw-file" => body = Some(std::fs::read(&v).unwrap_or_else(|e| fail(&format!("{v}: {e}")))),
            "--raw-request" => raw_request = Some(std::fs::read(&v).unwrap_or_else(|e| fail(&format!("{v}: {e}")))),
            other => fail(&format!("Unknown argument: {other}")),
        }
        i += 2;
    }
    let url = url.unwrap_or_else(|| fail("call requires --url"));
    let path = match service.as_str() {
        "tool" => "/sdk.v1.SdkCustomToolCallbackService/CallCustomTool",
        "store" => "/sdk.v1.SdkStoreCallbackService/CallStore",
        other => fail(&format!("--service must be tool or store, not {other}")),
    };
    let resp = match raw_request {
        Some(raw) => {
            let u = http::parse_url(&url).unwrap_or_else(|e| fail(&e));
            http::send_raw(&u.host_port, &raw)
        }
        None => http::post_connect_json(&url, path, &token, &body.unwrap_or_else(|| b"{}".to_vec())),
    };
    match resp {
        Ok(r) => {
            let ct = r
                .headers
                .iter()
                .find(|(k, _)| k == "content-type")
                .map(|(_, v)| v.as_str())
                .unwrap_or("");
            println!("{} {ct}", r.status);
            println!("{}", String::from_utf8_lossy(&r.body));
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!("cursor-sdk-bridge-double call failed: {e}");
            std::process::exit(2)
        }
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("call") {
        call_main(&argv[1..]);
    }
    let a = parse_args(&argv);
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let host = a
        .host
        .clone()
        .or_else(|| env("CURSOR_SDK_BRIDGE_HOST"))
        .unwrap_or_else(|| "127.0.0.1".into());
    if !["127.0.0.1", "localhost", "::1"].contains(&host.as_str()) {
        fail(&format!(
            "Refusing to bind Cursor SDK bridge to non-loopback host \"{host}\" without allowNonLoopbackHost"
        ));
    }
    let port_s = a
        .port
        .clone()
        .or_else(|| env("CURSOR_SDK_BRIDGE_PORT"))
        .unwrap_or_else(|| "0".into());
    let port = parse_port(&port_s).unwrap_or_else(|| fail(&format!("Invalid port: {port_s}")));
    for (flag, v) in [
        ("--max-concurrent-agents", &a.max_agents),
        ("--max-message-bytes", &a.max_bytes),
    ] {
        if let Some(v) = v {
            if v.parse::<u64>().ok().filter(|n| *n > 0).is_none() {
                fail(&format!("Invalid {flag}: {v}"));
            }
        }
    }
    let store_url = a.store_url.clone().or_else(|| env("CURSOR_SDK_STORE_CALLBACK_URL"));
    let store_token = a
        .store_token
        .clone()
        .or_else(|| env("CURSOR_SDK_STORE_CALLBACK_AUTH_TOKEN"));
    if store_url.is_some() != store_token.is_some() {
        fail("Store callback configuration requires both URL and auth token (--store-callback-url / --store-callback-auth-token or CURSOR_SDK_STORE_CALLBACK_URL / CURSOR_SDK_STORE_CALLBACK_AUTH_TOKEN)");
    }
    let tool_url = a.tool_url.clone().or_else(|| env("CURSOR_SDK_TOOL_CALLBACK_URL"));
    let tool_token = a
        .tool_token
        .clone()
        .or_else(|| env("CURSOR_SDK_TOOL_CALLBACK_AUTH_TOKEN"))
        .or_else(|| env("CURSOR_SDK_TOOL_CALLBACK_TOKEN"));
    if tool_url.is_some() != tool_token.is_some() {
        fail("Tool callback configuration requires both URL and auth token (--tool-callback-url / --tool-callback-auth-token or CURSOR_SDK_TOOL_CALLBACK_URL / CURSOR_SDK_TOOL_CALLBACK_AUTH_TOKEN)");
    }
    let store = match &a.local_store {
        None => store::Store::Memory(Default::default()),
        Some(js) => {
            let v: serde_json::Value = serde_json::from_str(js).unwrap_or_else(|e| {
                fail(&format!(
                    "Invalid --local-store JSON: cannot decode sdk.v1.LocalAgentStoreConfig from JSON: {e}"
                ))
            });
            let ty = v["type"].as_str().unwrap_or("");
            match ty {
                "custom" => match (&store_url, &store_token) {
                    (Some(u), Some(t)) => store::Store::Custom {
                        url: u.clone(),
                        token: t.clone(),
                    },
                    _ => store::Store::Unconfigured,
                },
                "jsonl" if v["rootDir"].as_str().or(v["root_dir"].as_str()).is_none() => {
                    eprintln!("cursor-sdk-bridge failed: ConnectError: [invalid_argument] local.store type \"jsonl\" requires rootDir");
                    std::process::exit(1);
                }
                "jsonl" | "sqlite" | "memory" | "" => store::Store::Memory(Default::default()),
                other => {
                    eprintln!("cursor-sdk-bridge failed: ConnectError: [invalid_argument] Unsupported local.store type: {other}");
                    std::process::exit(1);
                }
            }
        }
    };
    let _ = VERBOSE.set(a.verbose);
    let workspace = a.workspace.clone().unwrap_or_else(|| {
        std::env::current_dir()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| ".".into())
    });

    install_signals();
    let bind_host = if host == "localhost" {
        "127.0.0.1"
    } else {
        host.as_str()
    };
    let listener = TcpListener::bind((bind_host, port)).unwrap_or_else(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            fail(&format!("listen EADDRINUSE: address already in use {host}:{port}"))
        }
        fail(&format!("listen: {e}"))
    });
    let port = listener.local_addr().expect("local addr").port();
    let (dir, token) = make_token_file();
    let _ = TOKEN_DIR.set(dir.clone());
    let url_host = if host == "::1" {
        "[::1]".to_string()
    } else {
        host.clone()
    };
    let url = if port == 80 {
        format!("http://{url_host}")
    } else {
        format!("http://{url_host}:{port}")
    };
    let home = std::env::var("HOME").unwrap_or_else(|_| "~".into());
    let state_root = a.state_root.clone().unwrap_or_else(|| {
        format!(
            "{home}/.cursor/sdk-agent-store/{:024x}",
            util::fnv64(&workspace) as u128
        )
    });
    let js = |v: &str| serde_json::to_string(v).expect("json");
    let mut ready = format!(
        "{{\"schemaVersion\":1,\"serverVersion\":\"1.0.0-double\",\"pid\":{},\"transport\":\"tcp\",\"protocol\":\"connect\",\"host\":{},\"port\":{port},\"url\":{},\"authTokenFile\":{},\"workspaceRef\":{},\"stateRoot\":{}",
        std::process::id(),
        js(&host),
        js(&url),
        js(&format!("{dir}/auth-token")),
        js(&workspace),
        js(&state_root)
    );
    if let Some(n) = &a.max_agents {
        ready.push_str(&format!(",\"maxConcurrentAgents\":{}", n.parse::<u64>().unwrap_or(0)));
    }
    if let Some(n) = &a.max_bytes {
        ready.push_str(&format!(",\"maxMessageBytes\":{}", n.parse::<u64>().unwrap_or(0)));
    }
    ready.push('}');
    let svc = Arc::new(service::Svc {
        token,
        workspace,
        store,
        tool_callback: Mutex::new(tool_url.zip(tool_token)),
        live: Default::default(),
        runs: Default::default(),
        agent_runs: Default::default(),
    });
    eprintln!("cursor-sdk-bridge ready {ready}");
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let svc = svc.clone();
        std::thread::spawn(move || serve_conn(svc, conn));
    }
}
