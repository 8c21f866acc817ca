// The X-macro plumbing for cuda_hooks.def, kept free of any C++ so that the preprocessor can
// also turn the table into libmemtool.so's version script (preload/libmemtool.map.in).
#pragma once

#define MEMTOOL_STRIP(...) __VA_ARGS__
// MEMTOOL_PREPEND(x, (a, b)) -> x, a, b   and   MEMTOOL_PREPEND(x, ()) -> x
#define MEMTOOL_PREPEND(first, list) MEMTOOL_PREPEND_I(first, MEMTOOL_STRIP list)
#define MEMTOOL_PREPEND_I(first, ...) first __VA_OPT__(, ) __VA_ARGS__
// The exported name of a variant of `symbol`.
#define MEMTOOL_VNAME_plain(symbol) symbol
#define MEMTOOL_VNAME_ptsz(symbol) symbol##_ptsz
#define MEMTOOL_VNAME_ptds(symbol) symbol##_ptds
#define MEMTOOL_VNAME(variant, symbol) MEMTOOL_VNAME_##variant(symbol)
// Calls G(variant, api, symbol, since, params, args) once per exported wrapper of a line.
#define MEMTOOL_FOR_VARIANTS_none(G, ...) G(plain, __VA_ARGS__)
#define MEMTOOL_FOR_VARIANTS_ptsz(G, ...) G(plain, __VA_ARGS__) G(ptsz, __VA_ARGS__)
#define MEMTOOL_FOR_VARIANTS_ptds(G, ...) G(plain, __VA_ARGS__) G(ptds, __VA_ARGS__)
#define MEMTOOL_FOR_VARIANTS(G, api, symbol, since, per_thread, params, args) \
  MEMTOOL_FOR_VARIANTS_##per_thread(G, api, symbol, since, params, args)
