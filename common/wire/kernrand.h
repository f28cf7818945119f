/* Random bytes straight from the kernel (getrandom(2)), for the secrets and
 * ids the driver and relay make: relay tokens, instance ids, handshake
 * nonces. Not OpenSSL's DRBG: its state is memory, and a sandbox restored
 * many times from one checkpoint (Pod Snapshots, `runsc restore`) copies it
 * into every clone with the same pid, so OpenSSL sees no fork and every
 * clone would draw the same bytes. The kernel's pool is not in the
 * checkpoint (gVisor serves getrandom from the host), so each clone's draws
 * are its own with no detection at all (docs/turn.md, "Clones"). */
#pragma once

#include <stddef.h>

/* Fills buf with n bytes from getrandom(2) (flags 0: blocks only until the
 * kernel's pool is first initialised), retrying EINTR and short reads.
 * -errno if the kernel refuses (ENOSYS, EFAULT...): never a weak fallback;
 * buf is then wiped. */
int kernrand_bytes(void *buf, size_t n);
