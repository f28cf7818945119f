/* Reseeding OpenSSL's DRBGs from the kernel, for a process that may be one
 * of several clones of one checkpoint. OpenSSL 3 notices a fork by a change
 * of pid and reseeds then; a process restored by gVisor keeps its pid, so
 * every clone of one snapshot would go on drawing the same bytes from
 * RAND_bytes (TLS randoms, any key OpenSSL makes) until a reseed interval
 * ran out. The driver's own secrets come from the kernel (kernrand.h); this
 * covers everything else that draws from OpenSSL, once a restore is seen
 * (driver/turn/restore.h). */
#pragma once

#include <stdint.h>

/* Reseeds the primary DRBG and this thread's public and private ones, each
 * with prediction resistance (fresh entropy from the OS, through the parent
 * for the two children) and, as additional input, 32 bytes of getrandom(2)
 * and restores (the caller's count of restores, so two reseeds of one
 * process never feed the same input). 0, or -EIO if any of the three could
 * not be reseeded (then the caller must not trust OpenSSL's randomness),
 * or the kernel's -errno for the additional input. */
int hg_rand_reseed(uint64_t restores);
