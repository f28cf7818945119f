/* Where a turn's files live (docs/design/driver-sidecar.md, "How a turn runs"),
 * named once for the driver and the relay. Paths are relative to the two
 * volumes' mount paths (config: volumes.home.mountPath, volumes.ctl.mountPath).
 *
 * hangar-home: the driver writes, the agent reads (mounted read-only there).
 * hangar-ctl:  the driver's alone (never mounted in the agent), files 0600. */
#pragma once

/* hangar-home */
#define LAYOUT_HOME_PORT     "relay.port"            /* the listener's port, decimal + "\n" */
#define LAYOUT_HOME_VERDICT  "verdict.json"          /* the probe's verdict, for the relay */
#define LAYOUT_HOME_SETTINGS "harness-settings.json" /* hangar's harness settings */
#define LAYOUT_HOME_RUN      "run"                   /* the run's directory */
#define LAYOUT_HOME_TURN     "run/turn.json"         /* turn id, directory, script path */
#define LAYOUT_HOME_SCRIPT   "run/script"            /* what the relay starts, with /bin/sh */
#define LAYOUT_HOME_LOG      "run/log"               /* the harness's stdout and stderr */
#define LAYOUT_HOME_EXIT     "run/exit.json"         /* how the harness (and the turn) ended */

/* hangar-ctl */
#define LAYOUT_CTL_VERDICT   "verdict.json"   /* the probe's verdict, for the driver */
#define LAYOUT_CTL_RUN_KEY   "run.key"        /* the run key: never leaves this volume */
#define LAYOUT_CTL_TOKEN     "relay.token"    /* the relay token, hex */
#define LAYOUT_CTL_SOCKET    "ctl.sock"       /* hangar-driver ctl talks here */
#define LAYOUT_CTL_EVENTS    "events.jsonl"   /* one JSON object per line */
#define LAYOUT_CTL_STATUS    "status.json"    /* the turn's state, rewritten atomically */
#define LAYOUT_CTL_APPROVALS "approvals.json" /* approval requests and decisions */
#define LAYOUT_CTL_TREES     "trees.jsonl"    /* tree hashes, by: agent, trusted: false */
