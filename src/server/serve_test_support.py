"""What the serve tests share: a fresh work folder with the real segmentation model and the tiny
test embedding model (labels are noise; every stage runs), and the flags that select them."""
import os
import shutil
import subprocess


def prepare_models(work, shared, write_model):
    """Empties `work`, puts the models in work/models, returns the engine flags for them."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(f"{work}/models")
    for name in ("segmentation-3.0-fp16.onnx", "plda"):
        os.symlink(f"{shared}/models/{name}", f"{work}/models/{name}")
    subprocess.run([write_model, f"{work}/models/tiny-embedding.onnx"], check=True,
                   stdout=subprocess.DEVNULL)
    return ["--models", f"{work}/models", "--embedding-model",
            f"{work}/models/tiny-embedding.onnx", "--clustering", "ahc"]
