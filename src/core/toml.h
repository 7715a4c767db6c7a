#pragma once
// toml++ as every headroom file includes it. Catalogs and watch configs are input users and
// attackers write, so the parser's own assumptions about that input are not trusted:
// Debian's toml++ 3.3 asserts (debug builds, the fuzz build) or tells the compiler to assume
// (NDEBUG with clang: __builtin_assume) that, for example, a table header's key starts with
// a key character. "[" followed by a newline breaks that: an abort, or undefined behaviour.
// Here its assertions and assumptions are compiled out in every build, as GCC's release
// build already had them; the parser's defensive branches then report a parse error (found by
// fuzzing the catalog parser, tests/core/signatures/catalog_test.cc). The fuzz build (ASan)
// runs the same parser, so a memory error those branches let through would still show.
// Every file includes toml++ through this header: one definition of its inline functions.

#pragma push_macro("NDEBUG")
#undef NDEBUG
#define TOML_ASSERT(expr) static_assert(true)
#include <toml++/toml.h>
#pragma pop_macro("NDEBUG")
