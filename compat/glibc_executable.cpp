// The glibc pins only executables take (a static library: this object is linked only where the
// --wrap below makes crt1.o ask for it, never into libmemtool.so).
// __libc_start_main: glibc 2.34 gave it a new version, because the new crt1.o passes no init
// function and expects libc to run the program's constructors itself; older glibcs run only
// the init function they are given. So the program's start goes through
// __wrap___libc_start_main (-Wl,--wrap=__libc_start_main), which calls the old version with an
// init function that runs the constructors as the old crt1.o's __libc_csu_init did. Every
// glibc, new ones included, then calls that function and nothing else for the program's
// constructors (tests/unit/compat checks they run once).
// dlsym: as in glibc_pins.def, through --wrap=dlsym; not there because libmemtool.so defines and
// exports its own dlsym.
// Built only with MEMTOOL_GLIBC_PINS, x86_64 only; no header (the prototypes would conflict).

extern "C" {
using MemtoolProgramMain = int (*)(int, char**, char**);
using MemtoolProgramInit = void (*)(int, char**, char**);

int memtool_glibc_old___libc_start_main(MemtoolProgramMain main, int argc, char** argv, MemtoolProgramInit init,
                                        void (*fini)(), void (*rtld_fini)(), void* stack_end);
__asm__(".symver memtool_glibc_old___libc_start_main, __libc_start_main@GLIBC_2.2.5");

// The linker's bounds of the program's .init_array, and crti.o's .init entry.
extern MemtoolProgramInit __init_array_start[] __attribute__((visibility("hidden")));
extern MemtoolProgramInit __init_array_end[] __attribute__((visibility("hidden")));
void _init();

static void memtool_run_program_constructors(int argc, char** argv, char** envp) {
  _init();
  for (MemtoolProgramInit* constructor = __init_array_start; constructor != __init_array_end; ++constructor) {
    (*constructor)(argc, argv, envp);
  }
}

__attribute__((visibility("hidden"))) int __wrap___libc_start_main(MemtoolProgramMain main, int argc, char** argv,
                                                                   MemtoolProgramInit init, void (*fini)(),
                                                                   void (*rtld_fini)(), void* stack_end) {
  // init is null from the new crt1.o; an old one would give its own, which is then the right one.
  return memtool_glibc_old___libc_start_main(
      main, argc, argv, init != nullptr ? init : memtool_run_program_constructors, fini, rtld_fini, stack_end);
}

void* memtool_glibc_old_dlsym(void* handle, const char* name);
__asm__(".symver memtool_glibc_old_dlsym, dlsym@GLIBC_2.2.5");
__attribute__((visibility("hidden"))) void* __wrap_dlsym(void* handle, const char* name) {
  return memtool_glibc_old_dlsym(handle, name);
}
}  // extern "C"
