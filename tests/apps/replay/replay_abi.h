/* What a replayed operator's kernel receives: the buffers it touches as pointer parameters (so
 * memtool sees them, as it sees a real kernel's arguments) or, with replay_train --table, some
 * or all of them only in a pointer table in device memory (the second parameter), as grouped
 * GEMMs reach theirs; and, in host memory, what each must hold and what it gets. Shared by
 * replay_train and replay_kernels.so. Parameters: the launch description, the table (0: none),
 * then REPLAY_MAX_REFS pointers. */
#ifndef MEMTOOL_REPLAY_ABI_H
#define MEMTOOL_REPLAY_ABI_H

#include <stdint.h>

#define REPLAY_MAX_REFS 40u      /* pointer parameters of every replay kernel */
#define REPLAY_KERNELS 128u      /* replay_op_0 ... replay_op_127: one per operator name */
#define REPLAY_SAMPLE_BYTES 512u /* one checked word per this many bytes (and the last word) */

typedef struct replay_ref {
  uint64_t bytes;
  uint64_t check_tag; /* 0: contents unknown, not checked */
  uint64_t fill_tag;  /* 0: read only */
  uint64_t slot;      /* for the corruption message */
} replay_ref;

typedef struct replay_launch {
  uint32_t count;
  uint32_t step;
  uint64_t op;
  uint64_t compute_ns; /* the kernel takes at least this long (0: only its checks) */
  uint64_t via_table;  /* bit i: ref i's address is entry i of the table, not pointer parameter i */
  replay_ref refs[REPLAY_MAX_REFS];
} replay_launch;

#ifdef __cplusplus
extern "C" {
#endif
/* Words found different from what the last writer left, over the process. */
unsigned long long replay_corrupted_words(void);
#ifdef __cplusplus
}
#endif

#endif
