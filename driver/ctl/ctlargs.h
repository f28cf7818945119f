/* `hangar-driver ctl OP [ARGS]` as a request: the op found by its words,
 * each argument taken as the op's row in ctlops.c says (options first, in
 * any order; then the positional members). The daemon checks the request
 * again (ctlreq_parse): this only builds it, and says the op's synopsis
 * when the command line does not fit it. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "ctlops.h"
#include "error.h"

/* argv: the words after `ctl` (and its --config). 0 with *ret_req (owned)
 * and *ret_op, or -EINVAL (a usage error: err says the op's synopsis),
 * -ENOENT (no such op), or another -errno reading a FILE member. */
int ctlargs_build(int argc, char *const *argv, json_t **ret_req, ctlreq_op_t *ret_op,
                  hg_error_t *err);

/* The text of path, or of stdin for "-", at most max bytes, in one buffer
 * that is never reallocated (a spec holds the run key: no copy is left
 * behind in freed memory); the caller wipes it (token_wipe) and frees it.
 * From stdin, the read stops as soon as what is in holds one whole JSON
 * object or array (ctlargs_json_end): a spec is one, and waiting for the
 * end of stdin costs an exec another round trip through the API server
 * (the close signal) before the turn can start. Whatever follows is not
 * read; the daemon parses what was. 0, or -errno (-EFBIG past max). */
/* The length of the JSON object or array at the start of buf (after
 * white space), brackets matched outside strings, or 0 if buf does not
 * hold a whole one yet (or starts with anything else). Not a parser: a
 * cheap bound on where one ends; the daemon's parser judges it. */
size_t ctlargs_json_end(const char *buf, size_t len);

int ctlargs_read_text(const char *path, size_t max, char **ret_text, size_t *ret_len);
