"""A backend part run by cgc's reference interpreter (`cgc-opt
--interpret`) instead of a CUDA graph: the backend's "interpreter"
executor, which checks a split on any machine, CUDA or not. Each call
writes its inputs to a safetensors file, runs cgc-opt on the part's IR
and reads the outputs back onto the first input's device (slow: for
tests, never for speed)."""
import json
import os
import shutil
import subprocess
import tempfile

import torch

from ..errors import RefusedError
from ..safetensors import read_safetensors, write_safetensors
from .capture import weight_value


class Interpreted:
    def __init__(self, ir, out_dtypes, cgc_opt=None):
        self.cgc_opt = cgc_opt or os.environ.get("CGC_OPT")
        if not self.cgc_opt:
            raise RefusedError("the interpreter executor needs cgc-opt: give the option "
                               "'cgc_opt' or set $CGC_OPT")
        self.ir = ir
        self.inputs = [i["name"] for i in ir["inputs"]]
        self.outputs = [o if isinstance(o, str) else o["name"] for o in ir["outputs"]]
        self.out_dtypes = out_dtypes  # torch's (bf16 comes back as f32)

    def __call__(self, *args):
        work = tempfile.mkdtemp(prefix="cgc-interpret-")
        try:
            model, feed, out = (os.path.join(work, f) for f in
                                ("part.json", "in.safetensors", "out.safetensors"))
            with open(model, "w") as f:
                json.dump(self.ir, f)
            write_safetensors(feed, {name: weight_value(x) for name, x in zip(self.inputs, args)})
            r = subprocess.run([self.cgc_opt, model, "--interpret", "--inputs", feed,
                                "--outputs", out, "--overwrite"], capture_output=True, text=True)
            if r.returncode:
                raise RuntimeError(f"cgc-opt --interpret: {r.stderr.strip()[-2000:]}")
            values = read_safetensors(out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        device = next((x.device for x in args if isinstance(x, torch.Tensor)), "cpu")
        return tuple(torch.from_numpy(values[name].copy()).to(device, dtype)
                     for name, dtype in zip(self.outputs, self.out_dtypes))
