/* memtool's C API, exported by libmemtool.so. A program that wants to call it without
 * depending on memtool looks the functions up with dlsym(RTLD_DEFAULT, "memtool_...") and
 * skips the call when they are absent. */
#ifndef MEMTOOL_INTERPOSE_MEMTOOL_H
#define MEMTOOL_INTERPOSE_MEMTOOL_H

#ifdef __cplusplus
extern "C" {
#endif

/* An explicit iteration boundary: the next event starts a new training iteration. */
void memtool_iteration_mark(void);

/* The version of the loaded libmemtool.so, e.g. "0.1.0". */
const char* memtool_version(void);

#ifdef __cplusplus
}
#endif

#endif
