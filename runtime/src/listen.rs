//! Listening sockets as Go's listeners make them, for the probe, metrics and webhook servers:
//! `:port` is every interface, IPv6 and IPv4 alike.

use crate::{Error, Result};

/// Binds `addr` for `what`. `:8081` (Go's form for "every interface") listens on IPv6 and IPv4
/// alike, as Go's listeners do: the IPv6 wildcard with `IPV6_V6ONLY` off, or the IPv4 wildcard
/// on a host without IPv6. Any other address (`127.0.0.1:8081`, `[::1]:8081`) is bound as it is.
pub(crate) fn bind_std(what: &'static str, addr: &str) -> Result<std::net::TcpListener> {
    let failed = |address: &str| {
        let address = address.to_owned();
        move |source| Error::Bind {
            what,
            address,
            source,
        }
    };
    let listener = match addr.strip_prefix(':') {
        Some(port) => {
            let port: u16 = port.parse().map_err(|_| {
                Error::Config(format!("the {what} address {addr} has no port number"))
            })?;
            match dual_stack(port) {
                Ok(listener) => listener,
                Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
                    return Err(failed(addr)(error));
                }
                // No IPv6 on this host.
                Err(_) => std::net::TcpListener::bind(("0.0.0.0", port)).map_err(failed(addr))?,
            }
        }
        None => std::net::TcpListener::bind(addr).map_err(failed(addr))?,
    };
    listener.set_nonblocking(true).map_err(failed(addr))?;
    Ok(listener)
}

/// A listener on every IPv6 and IPv4 address of `port`.
fn dual_stack(port: u16) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::IPV6, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_only_v6(false)?;
    // As Go's listeners: a restarted manager binds at once, past connections in TIME_WAIT.
    socket.set_reuse_address(true)?;
    let address = std::net::SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port));
    socket.bind(&address.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}
