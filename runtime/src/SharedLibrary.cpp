//===- SharedLibrary.cpp - libcgc_runtime.so --------------------------------===//
//
// The shared runtime library holds the static runtime whole (CMake links it
// with WHOLE_ARCHIVE), so every cgc_* function of cgc/cgc_runtime.h is
// exported; this file only gives the library target a source of its own.
//
//===----------------------------------------------------------------------===//
#include "cgc/cgc_runtime.h"
