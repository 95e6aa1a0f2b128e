/*
 * failure_kind.h - why a case failed inside the harness: one enum shared by
 * the harness (which writes the name into status.json) and the trusted
 * parent (which parses it back with failure_kind_parse and judges it with
 * verdict_status_of_failure, verdict.h). Names are the wire format
 * (HARNESS.md section 4); values are never renumbered.
 */
#ifndef KILN_FAILURE_KIND_H
#define KILN_FAILURE_KIND_H

#include <stdbool.h>

enum failure_kind {
    FK_NONE = 0,
    FK_MODULE = 1,            /* image or kernel missing; the library stays resident */
    FK_LAUNCH_FAILED = 2,     /* the launch was refused; the context is still usable */
    FK_CUDA_ERROR = 3,        /* an error at synchronization */
    FK_TAMPERING = 4,         /* a poisoned region or fingerprint changed */
    FK_OUT_OF_BOUNDS = 5,     /* a guard past an output was written */
    FK_OVERWRITES_INPUTS = 6, /* an input changed */
    FK_NONDETERMINISTIC = 7,  /* the same inputs gave other bits */
    FK_UNAVAILABLE = 8,       /* a vendor baseline this backend cannot run */
    FK_TIMEOUT = 9,           /* the case ran past its time limit (the watchdog) */
    FK_ALLOCATION_SLACK = 10, /* the rounded-up tail of an allocation changed */
};

/* The wire name ("cuda_error"); "" for FK_NONE. Never NULL. */
const char *failure_kind_name(enum failure_kind k);

/* The kind named `s`; false for a name kiln does not know. */
bool failure_kind_parse(const char *s, enum failure_kind *out);

/* True when the device may be unusable after this kind of failure, so the
 * case's outputs are not worth returning. */
bool failure_kind_device_lost(enum failure_kind k);

#endif
