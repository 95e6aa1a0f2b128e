/*
 * uidslot.h - a host uid/gid of its own for each sandbox, when kiln runs as
 * root. Sharing one uid (65534, "nobody") with every other nobody process
 * let any of them nsenter a sandbox, plant files in its /out or read its
 * init's memory; with a uid no other process holds, they cannot.
 *
 * The range is $KILN_SANDBOX_UIDS ("BASE:COUNT"), by default
 * 1879048192:65536 (0x70000000, above systemd's container range and below
 * 2^31: no account or container uses it). A slot is reserved by an
 * exclusive flock on /run/kiln/sandbox-uids/<slot>, tried from pid % COUNT
 * onwards: two live sandboxes never share a uid, in one process or many,
 * and a crashed kiln's slots free themselves (the lock dies with the last
 * process holding it: kiln and the sandbox's setup and init processes).
 */
#ifndef KILN_SANDBOX_UIDSLOT_H
#define KILN_SANDBOX_UIDSLOT_H

#include <sys/types.h>

#include "error.h"

#define UIDSLOT_DEFAULT_BASE  1879048192u
#define UIDSLOT_DEFAULT_COUNT 65536u
#define UIDSLOT_LOCK_DIR      "/run/kiln/sandbox-uids"

struct uid_slot {
    uid_t uid;   /* also the gid */
    int lock_fd; /* -1 when none is held */
};

/* Reserves a free uid of the range; uidslot_release() after the run. */
enum kiln_rc uidslot_take(struct uid_slot *s, struct kiln_err *err) KILN_NODISCARD;

void uidslot_release(struct uid_slot *s);

#endif
