/* The driver's control socket: a Unix stream socket in hangar-ctl (0600, in
 * a volume the agent never mounts), serving hangar's `hangar-driver ctl`
 * commands. Each connection's peer uid is checked with SO_PEERCRED; only the
 * driver's own uid is served. One request per connection: a JSON object the
 * client ends with shutdown(SHUT_WR); docs/turn.md lists the operations. */
#pragma once

#include <sys/types.h>

#include "error.h"

/* A request: its buffer starts small and grows to the max (a start request
 * carries the turn spec, up to 1 MiB, as a JSON string). */
#define CTLSOCK_REQUEST_MIN (16u * 1024u)
#define CTLSOCK_REQUEST_MAX (4u * 1024u * 1024u)

/* Binds path (refusing if a live driver already answers there). */
int ctlsock_listen(const char *path, int *ret_fd, hg_error_t *err);
/* Accepts one connection (non-blocking, CLOEXEC) whose peer runs as uid.
 * -EAGAIN: nothing waiting; -EPERM: a peer of another uid (closed). */
int ctlsock_accept(int lfd, uid_t uid, int *ret_fd, uid_t *ret_peer_uid);
/* The client side: connects to path. */
int ctlsock_connect(const char *path, int *ret_fd, hg_error_t *err);
