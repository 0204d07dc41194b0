"""Where the Hugging Face comparisons run: an interpreter with transformers (EMBER_HF_PYTHON, or
.venv-hf that `scripts/setup.sh --bench` makes); the tests that need it skip without it."""
import os
import subprocess

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def hf_python(*modules):
    """The first candidate interpreter that imports `modules`, or None."""
    for candidate in (os.environ.get("EMBER_HF_PYTHON"), os.path.join(ROOT, ".venv-hf", "bin", "python")):
        if candidate and os.path.exists(candidate):
            if subprocess.run([candidate, "-c", "import " + ", ".join(modules)], capture_output=True).returncode == 0:
                return candidate
    return None
