//===- CacheCommand.h - `cgc cache list|clear|info` -------------*- C++ -*-===//
#ifndef CGC_TOOLS_CGC_CACHECOMMAND_H
#define CGC_TOOLS_CGC_CACHECOMMAND_H

namespace cgc {

/// `cgc cache info|list|clear|trim` (argv[0] is "cache"): the compile cache's
/// folder, limit and size; its entries, most recently used first; removing
/// them. Exit status 0, or 2 for a bad command line.
int cgcCacheMain(int argc, char **argv);

} // namespace cgc

#endif
