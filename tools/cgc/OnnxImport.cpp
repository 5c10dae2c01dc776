//===- OnnxImport.cpp - `cgc model.onnx`: the ONNX importer, run first ----===//
#include "OnnxImport.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace cgc;

bool cgc::isOnnxModel(const std::string &path) {
  return llvm::StringRef(path).endswith_insensitive(".onnx");
}

// The directory that holds the importer's package `cgc`: beside this
// driver's bin/ when a wheel bundles it (site-packages/cgc/bin/cgc), else
// the source tree's python/.
static std::string importerPackageParent() {
  static int anchor;
  llvm::SmallString<256> dir(llvm::sys::fs::getMainExecutable(nullptr, &anchor));
  llvm::sys::path::remove_filename(dir); // .../cgc/bin
  llvm::sys::path::remove_filename(dir); // .../cgc
  llvm::SmallString<256> cli(dir);
  llvm::sys::path::append(cli, "onnx", "cli.py");
  if (!llvm::sys::fs::exists(cli))
    return CGC_PYTHON_DIR;
  llvm::sys::path::remove_filename(dir);
  return dir.str().str();
}

// The importer's package, ahead of what the user's PYTHONPATH holds less
// its empty and "." entries: Python reads those as the working folder.
static std::string importerPythonPath() {
  std::string path = importerPackageParent();
  const char *old = std::getenv("PYTHONPATH");
  llvm::SmallVector<llvm::StringRef, 8> entries;
  llvm::StringRef(old ? old : "").split(entries, ':');
  for (llvm::StringRef entry : entries)
    if (!entry.empty() && entry != "." && entry != "./")
      path += ":" + entry.str();
  return path;
}

// The importer's start: `python3 -c` with the working folder ('' and '.')
// taken off sys.path before anything is imported from it (site runs
// before -c puts '' there, so only this code sees it), which works from
// Python 3.8 on and keeps site-packages and PYTHONPATH; a package that
// cannot be imported is said in one line, never as a traceback, and a
// signal before cgc.onnx.cli handles them ends it without one.
static const char kStartImporter[] =
    "import sys\n"
    "sys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"
    "import signal\n"
    "for s in (signal.SIGINT, signal.SIGTERM):\n"
    "    signal.signal(s, signal.SIG_DFL)  # until cgc.onnx.cli sets its own\n"
    "try:\n"
    "    from cgc.onnx.cli import main\n"
    "except Exception as e:\n"
    "    sys.stderr.write(sys.argv[-1] + ': error: cannot start the ONNX "
    "importer (python/cgc) with ' + sys.executable + ': ' + str(e) + "
    "' (it needs numpy and onnx: pip install onnx==1.22.0)\\n')\n"
    "    sys.exit(1)\n"
    "sys.exit(main())\n";

//===----------------------------------------------------------------------===//
// Cleanup on SIGINT and SIGTERM. The handler uses only async-signal-safe
// calls on fixed buffers: it passes the signal to the importer and waits
// for it (the importer removes what it was writing), removes the imported
// files and the folder, then dies of the signal with the default action
// (exit status 128 + signal in a shell).
//===----------------------------------------------------------------------===//

namespace {
constexpr int kGuardedSignals[] = {SIGINT, SIGTERM};
constexpr size_t kMaxPath = 4096;
char gJsonPath[kMaxPath], gWeightsPath[kMaxPath], gDirPath[kMaxPath];
volatile sig_atomic_t gImporterPid = 0;
struct sigaction gPreviousActions[2];
bool gGuarded = false;
} // namespace

extern "C" void cgcOnnxImportSignal(int sig) {
  pid_t child = gImporterPid;
  if (child > 0) {
    kill(child, sig);
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  unlink(gJsonPath);
  unlink(gWeightsPath);
  rmdir(gDirPath);
  signal(sig, SIG_DFL);
  raise(sig);
}

static bool copyPath(char *buffer, llvm::StringRef path) {
  if (path.size() >= kMaxPath)
    return false;
  std::memcpy(buffer, path.data(), path.size());
  buffer[path.size()] = 0;
  return true;
}

static void guardFolder(llvm::StringRef dir, llvm::StringRef json,
                        llvm::StringRef weights) {
  if (!copyPath(gDirPath, dir) || !copyPath(gJsonPath, json) ||
      !copyPath(gWeightsPath, weights))
    return; // A path this long is not cleaned on a signal.
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = cgcOnnxImportSignal;
  sigfillset(&action.sa_mask);
  for (size_t k = 0; k < 2; ++k)
    sigaction(kGuardedSignals[k], &action, &gPreviousActions[k]);
  gGuarded = true;
}

static void unguardFolder() {
  if (!gGuarded)
    return;
  for (size_t k = 0; k < 2; ++k)
    sigaction(kGuardedSignals[k], &gPreviousActions[k], nullptr);
  gGuarded = false;
}

OnnxImport::~OnnxImport() {
  if (dir.empty())
    return;
  llvm::sys::fs::remove_directories(dir);
  unguardFolder();
}

bool OnnxImport::run(const std::string &onnxPath,
                     llvm::ArrayRef<std::string> shapes, std::string &error,
                     int &status) {
  status = 1;
  const char *python = std::getenv("CGC_PYTHON");
  auto found = llvm::sys::findProgramByName(python ? python : "python3");
  if (!found)
    return error = "cannot find " + std::string(python ? python : "python3") +
                   " to run the ONNX importer (install Python 3.8 or newer "
                   "with the onnx package, or set CGC_PYTHON)",
           false;
  llvm::SmallString<128> tmp;
  if (llvm::sys::fs::createUniqueDirectory("cgc-onnx", tmp))
    return error = "cannot create a temporary directory", false;
  dir = tmp.str().str();
  llvm::SmallString<128> path(tmp);
  llvm::sys::path::append(path, "model.json");
  json = path.str().str();
  llvm::sys::path::replace_extension(path, "safetensors");
  guardFolder(dir, json, path);
  setenv("PYTHONPATH", importerPythonPath().c_str(), 1);
  std::vector<llvm::StringRef> args = {*found, "-c", kStartImporter, "-o", json};
  std::vector<std::string> shapeArgs;
  for (const std::string &shape : shapes)
    shapeArgs.push_back("--shape=" + shape);
  for (const std::string &arg : shapeArgs)
    args.push_back(arg);
  args.push_back("--"); // A model named -x.onnx is a file, not a flag.
  args.push_back(onnxPath);
  std::string message;
  bool failed = false;
  llvm::sys::ProcessInfo started =
      llvm::sys::ExecuteNoWait(*found, args, llvm::None, {}, 0, &message, &failed);
  if (failed || started.Pid <= 0)
    return error = "the ONNX importer did not start: " + message, false;
  gImporterPid = started.Pid;
  llvm::sys::ProcessInfo ended =
      llvm::sys::Wait(started, 0, /*WaitUntilTerminates=*/true, &message);
  gImporterPid = 0;
  if (ended.ReturnCode == 0)
    return status = 0, true;
  if (ended.ReturnCode < 0)
    return error = "the ONNX importer was stopped before it finished (" +
                   (message.empty() ? std::string("killed") : message) +
                   "); nothing was written",
           false;
  if (ended.ReturnCode > 128) // It said why (interrupted): its status is cgc's.
    status = ended.ReturnCode;
  return false; // Else the importer printed the refusal.
}
