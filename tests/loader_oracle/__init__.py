"""The ld.so oracle: scenarios built with gcc, run under the real glibc loader, and compared
with what ldscope's loader model predicts.

A `Scenario` describes shared libraries (each a gcc build: definitions, references, DT_NEEDED,
DT_RPATH/DT_RUNPATH, version nodes, link flags), where copies of them are placed at run time,
an executable or a dlopen host, and the environment (LD_LIBRARY_PATH, LD_PRELOAD). Names
carry two placeholders: `{P}` (a per-scenario prefix, so scenarios can share one directory,
sysroot and ld.so.cache) and `{S}` (the scenario's root directory as the loader sees it).

Modules, in the order a scenario goes through them: `spec` (the vocabulary), `generate`
(seeded random scenarios), `rules/` (hand-written ones, one module per rule family:
`rules/search_order.py`, `rules/dlopen.py`, ...), `regressions` (fixed disagreements),
`build` (gcc, sysroots), `observe` (the real ld.so), `predict` (the model), `compare`
(aspect by aspect, expectations, batches).

Two worlds:
* "host": the scenario lives in a tmp directory and runs against the real /etc/ld.so.cache.
* "chroot": the scenario lives in a sysroot (copies of libc and ld.so, an ld.so.conf listing
  the scenario's cache directories, a cache built with `ldconfig -X -r ROOT`); it runs under
  chroot(2) (root only) and the model gets `make_environment(root=ROOT)`. This is how cache
  hits, the default directories and DF_1_NODEFLIB are covered without touching the real
  /etc/ld.so.cache. /proc is not mounted in the sysroot, so the executable's `$ORIGIN` is
  never used there (ld.so could not compute it).

Observation of an executable scenario (four runs of the real program):
* trace: LD_TRACE_LOADED_OBJECTS=1 LD_WARN=1 LD_BIND_NOW=1 LD_DEBUG=bindings (what `ldd -r`
  does, plus the binding log): chosen paths, missing libraries, every missing version and
  undefined symbol, every symbol binding. The program does not run.
* plain: the program prints START, END (no calls) - load-time failures only.
* call: START, calls every referenced function and every library's `*_all` function (which
  uses every reference of that library), END - lazy failures surface at the call.
* now: as `call` with LD_BIND_NOW=1 - everything fails before START.
A dlopen scenario runs a small host program that dlopens libraries named on its command line
(RTLD_LOCAL / RTLD_GLOBAL first, then the target), prints `OK` or dlerror(), lists the loaded
objects (dl_iterate_phdr) after each dlopen and then calls the target's `*_all` functions.
"""
