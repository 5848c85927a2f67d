#!/usr/bin/env python3
"""Packs the staged Python package (BUILD/python/genc, see python/CMakeLists.txt)
into a wheel, and installs it with pip unless the same build is installed:

    make_wheel.py BUILD/python OUT_DIR [--install]

Written here rather than by setuptools: the module is already built by CMake,
so a wheel is only a zip with three metadata files, and this needs nothing
installed (no setuptools, no wheel, no build isolation fetching them). The
wheel is tagged for this interpreter and platform (it holds a CPython
extension); its build id (a hash of the files) lets a second run skip pip.
"""
import argparse
import base64
import hashlib
import os
import subprocess
import sys
import sysconfig
import zipfile

NAME, VERSION = "genc", "0.1.0"


def tag():
    impl = "cp%d%d" % sys.version_info[:2]
    return "%s-%s-%s" % (impl, impl, sysconfig.get_platform().replace("-", "_").replace(".", "_"))


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def package_files(stage):
    root = os.path.join(stage, NAME)
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if not f.startswith("."):
                path = os.path.join(folder, f)
                out.append((os.path.relpath(path, stage), path))
    return out


def build(stage, out_dir):
    files = [(arc, open(path, "rb").read(), os.access(path, os.X_OK)) for arc, path in package_files(stage)]
    build_id = hashlib.sha256(b"".join(arc.encode() + hashlib.sha256(d).digest() + bytes([x])
                                       for arc, d, x in files)).hexdigest()
    files.append(("%s/BUILD_ID" % NAME, build_id.encode() + b"\n", False))
    info = "%s-%s.dist-info" % (NAME, VERSION)
    files.append(("%s/METADATA" % info, ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: Compile Hugging Face "
                                         "ONNX exports into generation plans and run them\nRequires-Python: >=3.8\n"
                                         % (NAME, VERSION)).encode(), False))
    files.append(("%s/WHEEL" % info, ("Wheel-Version: 1.0\nGenerator: genc tools/make_wheel.py\n"
                                      "Root-Is-Purelib: false\nTag: %s\n" % tag()).encode(), False))
    record = "".join("%s,%s,%d\n" % (arc, digest(d), len(d)) for arc, d, _ in files) + "%s/RECORD,,\n" % info
    files.append(("%s/RECORD" % info, record.encode(), False))
    os.makedirs(out_dir, exist_ok=True)
    wheel = os.path.join(out_dir, "%s-%s-%s.whl" % (NAME, VERSION, tag()))
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data, executable in files:
            zi = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = (0o100755 if executable else 0o100644) << 16  # S_IFREG: pip looks
            z.writestr(zi, data)
    return wheel, build_id


def installed_build_id():
    # Run from / so that a genc folder in the current directory is not what gets imported.
    probe = "import genc, os; print(open(os.path.join(os.path.dirname(genc.__file__), 'BUILD_ID')).read().strip())"
    r = subprocess.run([sys.executable, "-c", probe], cwd="/", capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    return r.stdout.strip() if r.returncode == 0 else None


def install(wheel):
    base = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--force-reinstall",
            "--disable-pip-version-check", "--root-user-action=ignore", wheel]
    # Debian's system Python refuses pip installs (PEP 668) unless told.
    if subprocess.run(base, capture_output=True).returncode != 0:
        subprocess.run(base + ["--break-system-packages"], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stage")
    ap.add_argument("out_dir")
    ap.add_argument("--install", action="store_true")
    args = ap.parse_args()
    wheel, build_id = build(args.stage, args.out_dir)
    if args.install and installed_build_id() != build_id:
        install(wheel)
        print("genc: installed %s for %s" % (os.path.basename(wheel), sys.executable))


if __name__ == "__main__":
    main()
