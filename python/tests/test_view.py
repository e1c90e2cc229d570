"""nlembed.write_view: the map page written from arrays (the library's
nle_write_view_page): its metadata, positions, labels and images as the
page's script reads them, the same page as `nlembed view` writes from
files, and bad input refused naming the argument, leaving no page."""

import base64
import json
import os
import re
import subprocess

import numpy as np
import pytest

import nlembed

pytestmark = pytest.mark.skipif(not nlembed.view_available(),
                                reason="libnlembed built without the viewer (no node and npm)")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = ["T-shirt", "Coat & <tie>", "Bag", "Ankle boot"]


def page_data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 2)) * 40
    labels = np.array(NAMES, dtype=object)[rng.integers(0, len(NAMES), size=300)]
    images = rng.integers(0, 256, size=(300, 8, 8)).astype(np.float64)
    return X, labels, images


def block(html, name):
    return base64.b64decode(re.search(r'<script id="%s"[^>]*>([^<]*)</script>' % name, html).group(1))


def test_page_holds_the_arrays(tmp_path):
    X, labels, images = page_data()
    path = tmp_path / "map.html"
    nlembed.write_view(path, X, labels=labels, images=images, title="Blobs <1>", point_size=3, alpha=0.5)
    html = path.read_text()
    meta = json.loads(re.search(r'<script id="nle-meta" type="application/json">([^<]*)</script>', html).group(1))
    assert meta["n"] == 300 and meta["title"] == "Blobs <1>"
    assert meta["pointSize"] == 3 and meta["opacity"] == 0.5
    assert meta["labels"]["names"] == sorted(NAMES) and meta["labels"]["type"] == "uint8"
    assert meta["images"] == {"source": "", "width": 8, "height": 8, "channels": 1}
    assert "<title>Blobs &lt;1&gt;</title>" in html
    xy = np.frombuffer(block(html, "nle-xy"), "<f4").reshape(-1, 2)
    assert np.array_equal(xy, X.astype(np.float32))
    codes = np.frombuffer(block(html, "nle-labels"), "u1")
    assert [meta["labels"]["names"][c] for c in codes] == list(labels)
    pixels = np.frombuffer(block(html, "nle-images"), "u1").reshape(300, 64)
    assert np.array_equal(pixels, images.reshape(300, 64).astype(np.uint8))


def test_plain_page(tmp_path):
    X = np.arange(20.0).reshape(10, 2)
    nlembed.write_view(str(tmp_path / "plain.htm"), X)
    html = (tmp_path / "plain.htm").read_text()
    assert '"labels": null, "images": null' in html and 'id="nle-labels"' not in html
    assert '"title": "nlembed"' in html


def test_same_page_as_the_tool(tmp_path):
    """The tool's page of the same data, its sources (file names) aside."""
    tool = os.environ.get("NLEMBED_CLI") or os.path.join(REPO, "build", "nlembed")
    if not os.access(tool, os.X_OK):
        pytest.skip(f"no nlembed tool at {tool} (set NLEMBED_CLI)")
    X, labels, images = page_data()
    np.save(tmp_path / "emb.npy", X)
    np.save(tmp_path / "img.npy", images.reshape(300, 64))
    (tmp_path / "names.txt").write_text("".join(name + "\n" for name in labels))
    subprocess.run([tool, "view", str(tmp_path / "emb.npy"), "--labels", str(tmp_path / "names.txt"), "--images",
                    str(tmp_path / "img.npy"), "--title", "t", "-o", str(tmp_path / "tool.html"), "--quiet"],
                   check=True)
    nlembed.write_view(tmp_path / "py.html", X, labels=labels, images=images, title="t")

    def without_sources(name):
        return re.sub(r'"(embedding|source)": "[^"]*"', "", (tmp_path / name).read_text())

    assert without_sources("py.html") == without_sources("tool.html")


@pytest.mark.parametrize("kwargs, message", [
    (dict(X=np.zeros((5, 3))), "X has 3 columns"),
    (dict(X=np.zeros(5)), "X has shape (5,)"),
    (dict(X=np.array([[0, 1], [np.nan, 2]])), "X: value 2 (row 1) is not a finite single-precision number"),
    (dict(X=np.zeros((5, 2)), labels=[1, 2]), "X has 5 rows, labels has 2"),
    (dict(X=np.zeros((5, 2)), labels=np.arange(70000) % 70000), "X has 5 rows, labels has 70000"),
    (dict(X=np.zeros((70000, 2)), labels=np.arange(70000)), "labels: label 69999 is past the 65,536 classes"),
    (dict(X=np.zeros((5, 2)), images=np.zeros((5, 10))), "images: rows of 10 values are not square images"),
    (dict(X=np.zeros((5, 2)), images=np.zeros((4, 16))), "X has 5 rows, images has 4"),
    (dict(X=np.zeros((5, 2)), images=np.full((5, 4), np.inf)), "images: value 0 (row 0) is not finite"),
    (dict(X=np.zeros((5, 2)), alpha=1.5), "alpha=1.5"),
    (dict(X=np.zeros((5, 2)), point_size=-2), "point_size=-2"),
])
def test_bad_input_names_the_argument(tmp_path, kwargs, message):
    path = tmp_path / "bad.html"
    with pytest.raises(ValueError) as e:
        nlembed.write_view(path, **kwargs)
    assert message in str(e.value)
    assert os.listdir(tmp_path) == []


def test_extension(tmp_path):
    with pytest.raises(ValueError, match=r"the page is written as \.html or \.htm"):
        nlembed.write_view(tmp_path / "map.png", np.zeros((3, 2)))
