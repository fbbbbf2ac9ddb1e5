//! Under a service manager (systemd's `Type=notify`, packaging/punctual.service): the
//! server sends `READY=1` once it serves and `STOPPING=1` when a SIGTERM stops it, on
//! the datagram socket `NOTIFY_SOCKET` names.
//!
//! Guards against a unit that systemd never sees start (it would time out and kill a
//! healthy server) or that looks ready before its API answers.

use crate::common;

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use common::{Api, server_builder, start};

/// The next notification on `socket`, as text.
fn next_notification(socket: &UnixDatagram, what: &str) -> String {
    let mut buffer = [0u8; 4096];
    let size = socket.recv(&mut buffer).unwrap_or_else(|e| panic!("no notification {what}: {e}"));
    String::from_utf8_lossy(&buffer[..size]).into_owned()
}

#[test]
fn the_server_tells_the_service_manager_when_it_is_ready_and_when_it_stops() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&path).expect("bind the notification socket");
    socket.set_read_timeout(Some(Duration::from_secs(60))).expect("a read timeout");

    let mut server = start(server_builder().env("NOTIFY_SOCKET", &path));
    let ready = next_notification(&socket, "once serving");
    assert_eq!(ready.lines().collect::<Vec<_>>(), ["READY=1"], "{}", server.logs());
    Api::of(&server).get("/readyz").expect(200, "the API answers once READY=1 was sent");

    let status = server.terminate().unwrap_or_else(|e| panic!("SIGTERM: {e}"));
    let stopping = next_notification(&socket, "at SIGTERM");
    assert_eq!(stopping.lines().collect::<Vec<_>>(), ["STOPPING=1"], "{}", server.logs());
    assert!(status.success(), "exit status {status}\n{}", server.logs());
    socket.set_nonblocking(true).expect("a non-blocking socket");
    let mut rest = [0u8; 64];
    assert!(socket.recv(&mut rest).is_err(), "a third notification: {:?}", String::from_utf8_lossy(&rest));
}
