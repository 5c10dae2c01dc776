# lit configuration for cgc: RUN lines live in the .json test files.
import os
import lit.formats

config.name = "cgc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".json", ".test"]
# export-fixtures, train-fixtures, generate-fixtures and backend-fixtures hold program records
# (JSON, not lit tests: ctest export_fixtures, train_fixtures,
# generate_fixtures and backend_fixtures run them).
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "export-fixtures", "train-fixtures", "generate-fixtures",
                   "backend-fixtures"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.cgc_obj_root, "test")

config.environment["FILECHECK_OPTS"] = "--enable-var-scope --dump-input=fail"
# Every compile compiles: the compile cache's own tests turn it on with a
# folder of their own (tools/compile-cache.test).
config.environment["CGC_CACHE"] = "0"
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

tool_dirs = [config.cgc_tools_dir, config.llvm_tools_dir]
config.environment["PATH"] = os.pathsep.join(tool_dirs + [config.environment.get("PATH", "")])
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%examples", os.path.join(config.cgc_src_root, "examples")))
# project()'s version in CMakeLists.txt, the one source of cgc's version.
config.substitutions.append(("%cgc_version", config.cgc_version))
config.substitutions.append(("%cgc_rt", config.cgc_rt))
if os.path.exists(config.cgc_rt):
    config.available_features.add("cgc-rt")
config.substitutions.append(("%cgc_obj_root", config.cgc_obj_root))
if config.has_cuda_device:
    config.available_features.add("cuda")
# The ONNX importer's tests need the onnx package (scripts/setup.sh).
import subprocess
if subprocess.run([config.python_executable, "-c", "import onnx"],
                  capture_output=True).returncode == 0:
    config.available_features.add("onnx")
config.environment["PYTHONPATH"] = os.pathsep.join(
    [os.path.join(config.cgc_src_root, "python"), os.environ.get("PYTHONPATH", "")])
