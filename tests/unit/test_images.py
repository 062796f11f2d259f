"""Real-image dataset prep (ibrobust.data.images, ibrobust.data.idx) on tiny files made here."""

from __future__ import annotations

import hashlib
import pickle
import re
import socket
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from ibrobust.data.idx import read_idx, read_idx_header
from ibrobust.data.images import (
    ImageDataConfig,
    arrays_checksum,
    config_from_dict,
    decode_images,
    from_arrays,
    load_source,
    make_image_data,
    round_robin,
    stratified_counts,
    stratified_subset,
    subset_images,
)
from ibrobust.io import load_npz, save_npz

torch.set_num_threads(1)


def raises_naming(exc, path, *fragments):
    """pytest.raises whose message must contain ``path`` and every fragment."""
    return pytest.raises(exc, match=".*".join(re.escape(str(s)) for s in (path, *fragments)))


# ---------------------------------------------------------------------------- fake files


def idx_bytes(a: np.ndarray) -> bytes:
    """An IDX file of uint8 array ``a``: magic 00 00 08 ndim, big-endian sizes, items."""
    head = bytes([0, 0, 0x08, a.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in a.shape)
    return head + a.astype(np.uint8).tobytes()


def fake_mnist(root: Path, per_class=(3, 2)) -> dict[str, np.ndarray]:
    """Four IDX files in root/MNIST/raw: per_class[0] train and per_class[1] test images per
    digit, in a shuffled order, random pixels."""
    rng = np.random.default_rng(0)
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    out = {}
    for split, prefix, m in (("train", "train", per_class[0]), ("test", "t10k", per_class[1])):
        y = rng.permutation(np.repeat(np.arange(10), m)).astype(np.uint8)  # (N,)
        x = rng.integers(0, 256, size=(len(y), 28, 28), dtype=np.uint8)  # (N, 28, 28)
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(idx_bytes(x))
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(idx_bytes(y))
        out[f"x_{split}"], out[f"y_{split}"] = x, y
    return out


def fake_arrays(sizes_train, sizes_test, shape=(4, 5, 3), seed=0) -> dict[str, np.ndarray]:
    """npz-source arrays: sizes_*[c] images of class c, shuffled, random uint8 pixels."""
    rng = np.random.default_rng(seed)
    out = {}
    for split, sizes in (("train", sizes_train), ("test", sizes_test)):
        y = rng.permutation(np.repeat(np.arange(len(sizes)), sizes)).astype(np.int64)
        out[f"x_{split}"] = rng.integers(0, 256, size=(len(y), *shape), dtype=np.uint8)
        out[f"y_{split}"] = y
    return out


def write_npz(path: Path, arrays: dict) -> Path:
    np.savez(path, **arrays)
    return path


def npz_cfg(path, **kw) -> ImageDataConfig:
    return ImageDataConfig(source="npz", path=str(path), **kw)


def fake_imagefolder(root: Path, per_class=(3, 2), size=(5, 4)) -> dict:
    """root/{train,test}/{dog,ant,cat}/NN.png, each a constant RGB colour coding
    (split, class, item), so decoded pixels identify the file."""
    files = {}
    for s, (split, m) in enumerate((("train", per_class[0]), ("test", per_class[1]))):
        for c, cls in enumerate(("dog", "ant", "cat")):  # created unsorted on purpose
            d = root / split / cls
            d.mkdir(parents=True)
            for i in range(m):
                colour = (10 + s, 20 + 30 * c, 100 + i)
                p = d / f"{i:02d}.png"
                Image.new("RGB", size, colour).save(p)
                files[str(p)] = colour
    return files


def fake_cifar(root: Path) -> dict[str, np.ndarray]:
    """cifar-10-batches-py with one image per class in each of the 6 batches."""
    rng = np.random.default_rng(1)
    base = root / "cifar-10-batches-py"
    base.mkdir(parents=True)
    out = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        labels = rng.permutation(10).tolist()
        data = rng.integers(0, 256, size=(10, 3072), dtype=np.uint8)  # (n, 3 * 32 * 32)
        with open(base / name, "wb") as fh:
            pickle.dump({"data": data, "labels": labels}, fh)
        out[name] = (data, labels)
    with open(base / "batches.meta", "wb") as fh:
        pickle.dump({"label_names": [f"c{i}" for i in range(10)]}, fh)
    return out


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection or download fails the test loudly."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(torchvision.datasets.mnist, "download_and_extract_archive", refuse)
    monkeypatch.setattr(torchvision.datasets.cifar, "download_and_extract_archive", refuse)


# ---------------------------------------------------------------------------- config


def test_config_from_dict_drops_kind_and_makes_tuples():
    cfg = config_from_dict(
        {
            "kind": "image",
            "source": "mnist",
            "path": None,
            "download": True,
            "split": "explicit",
            "positive": [2],
            "negative": [7],
            "n_train": 50,
            "n_test": 10,
        }
    )
    assert cfg.positive == (2,) and cfg.negative == (7,) and cfg.download
    assert cfg.num_kept_classes == 2
    with pytest.raises(ValueError, match="unknown image data key.*'npoints'"):
        config_from_dict({"kind": "image", "source": "mnist", "npoints": 3})


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(source="svhn"), "source must be one of .*'svhn'"),
        (dict(source="mnist", path="x.npz"), "path must be null for source 'mnist'"),
        (dict(source="npz"), "path is required for source 'npz'"),
        (dict(source="npz", path="a.npz", download=True), "download: true applies to"),
        (dict(source="mnist", download="yes"), "download must be true or false"),
        (dict(source="mnist", split="thirds"), "split must be one of .*'thirds'"),
        (dict(source="mnist", split="explicit", positive=(2,)), "non-empty negative"),
        (dict(source="mnist", split="explicit", positive=2, negative=(3,)), "non-empty positive"),
        (dict(source="mnist", split="explicit", positive=(), negative=(1,)), "non-empty positive"),
        (
            dict(source="mnist", split="explicit", positive=(2, 3), negative=(3,)),
            r"share class\(es\) \[3\]",
        ),
        (dict(source="mnist", split="explicit", positive=(2, 2), negative=(3,)), "distinct"),
        (dict(source="mnist", split="explicit", positive=(1.5,), negative=(3,)), "integer"),
        (dict(source="mnist", split="parity", positive=(2,)), "positive is only for split"),
        (dict(source="mnist", split="halves", negative=(2,)), "negative is only for split"),
        (
            dict(source="mnist", split="explicit", positive=(10,), negative=(3,)),
            r"positive has class id\(s\) \[10\] outside \[0, 10\)",
        ),
        (dict(source="mnist", n_train=9), "n_train=9 is below the 10 kept classes"),
        (
            dict(
                source="npz", path="a", split="explicit", positive=(0,), negative=(1, 2), n_test=2
            ),
            "n_test=2 is below the 3 kept classes",
        ),
        (dict(source="mnist", n_train=0), "n_train must be a positive integer"),
        (dict(source="mnist", n_test=True), "n_test must be a positive integer"),
        (dict(source="mnist", n_train=100.0), "n_train must be a positive integer"),
        (dict(source="imagefolder", path="d", channels=2), "channels must be 1, 3 or null"),
        (dict(source="mnist", channels=3), "channels=3 but source 'mnist' has 1"),
    ],
)
def test_config_rejects(kw, message):
    with pytest.raises(ValueError, match=message):
        ImageDataConfig(**kw)


def test_split_classes_parity_halves_explicit():
    classes, sign = ImageDataConfig(source="mnist", split="parity").split_classes(10)
    assert classes.tolist() == list(range(10)) and classes.dtype == np.int64
    assert sign.tolist() == [1, -1] * 5 and sign.dtype == np.float32  # even -> +1
    classes, sign = ImageDataConfig(source="cifar10", split="halves").split_classes(10)
    assert sign.tolist() == [1] * 5 + [-1] * 5
    cfg = ImageDataConfig(source="mnist", split="explicit", positive=(7,), negative=(2,))
    classes, sign = cfg.split_classes(10)
    assert classes.tolist() == [2, 7] and sign.tolist() == [-1, 1]  # sorted ids, sign follows
    with pytest.raises(ValueError, match="'halves' needs an even number of classes, .* 3"):
        ImageDataConfig(source="npz", path="a", split="halves").split_classes(3)
    cfg = ImageDataConfig(source="npz", path="a", split="explicit", positive=(0,), negative=(5,))
    with pytest.raises(ValueError, match=r"negative has class id\(s\) \[5\].*\[0, 4\)"):
        cfg.split_classes(4)


# ---------------------------------------------------------------------------- idx / mnist


def test_idx_reader_round_trip(tmp_path):
    a = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    p = tmp_path / "a-idx3-ubyte"
    p.write_bytes(idx_bytes(a))
    h = read_idx_header(p, ndim=3)
    assert h.shape == (2, 3, 4) and h.offset == 16
    assert np.array_equal(read_idx(p, ndim=3), a)


def test_mnist_loads_exactly(tmp_path):
    ref = fake_mnist(tmp_path)
    raw = load_source(ImageDataConfig(source="mnist", download=False), tmp_path)
    assert raw.num_classes == 10 and raw.location == str(tmp_path / "MNIST" / "raw")
    for split in ("train", "test"):
        s = getattr(raw, split)
        assert s.x.shape == (len(ref[f"y_{split}"]), 1, 28, 28) and s.x.dtype == np.uint8
        assert np.array_equal(s.x[:, 0], ref[f"x_{split}"])
        assert s.labels.dtype == np.int64
        assert np.array_equal(s.labels, ref[f"y_{split}"])


def test_mnist_download_true_with_files_present_stays_offline(tmp_path, no_network):
    ref = fake_mnist(tmp_path)
    raw = load_source(ImageDataConfig(source="mnist", download=True), tmp_path)
    assert np.array_equal(raw.test.x[:, 0], ref["x_test"])


def test_mnist_missing_files_without_download(tmp_path, no_network):
    with raises_naming(FileNotFoundError, tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte"):
        load_source(ImageDataConfig(source="mnist"), tmp_path)
    fake_mnist(tmp_path)
    gone = tmp_path / "MNIST" / "raw" / "t10k-labels-idx1-ubyte"
    gone.unlink()
    with raises_naming(FileNotFoundError, gone, "download: true"):
        load_source(ImageDataConfig(source="mnist"), tmp_path)


def test_mnist_failed_download_is_an_error_naming_the_folder(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise RuntimeError("host unreachable")

    monkeypatch.setattr(torchvision.datasets.mnist, "download_and_extract_archive", offline)
    with raises_naming(RuntimeError, tmp_path / "MNIST" / "raw", "download failed"):
        load_source(ImageDataConfig(source="mnist", download=True), tmp_path)


def corrupt_truncate(raw):
    p = raw / "train-images-idx3-ubyte"
    p.write_bytes(p.read_bytes()[:-100])
    return p, "truncated"


def corrupt_magic(raw):
    p = raw / "t10k-images-idx3-ubyte"
    b = bytearray(p.read_bytes())
    b[3] = 2  # claims 2 dimensions
    p.write_bytes(bytes(b))
    return p, "magic number"


def corrupt_count(raw):
    p = raw / "train-labels-idx1-ubyte"
    y = np.zeros(29, dtype=np.uint8)  # 30 images, 29 labels
    p.write_bytes(idx_bytes(y))
    return p, "29 labels"


def corrupt_label(raw):
    p = raw / "t10k-labels-idx1-ubyte"
    y = read_idx(p, ndim=1)
    y[4] = 10
    p.write_bytes(idx_bytes(y))
    return p, "label 10 at item 4"


def corrupt_trailing(raw):
    p = raw / "t10k-labels-idx1-ubyte"
    p.write_bytes(p.read_bytes() + b"\0")
    return p, "trailing bytes"


@pytest.mark.parametrize(
    "corrupt", [corrupt_truncate, corrupt_magic, corrupt_count, corrupt_label, corrupt_trailing]
)
@pytest.mark.parametrize("download", [False, True])
def test_mnist_corrupt_file_is_a_value_error_naming_it(tmp_path, no_network, corrupt, download):
    fake_mnist(tmp_path)
    path, what = corrupt(tmp_path / "MNIST" / "raw")
    with raises_naming(ValueError, path, what):
        load_source(ImageDataConfig(source="mnist", download=download), tmp_path)


# ---------------------------------------------------------------------------- cifar10


def test_cifar10_missing_is_file_not_found(tmp_path, no_network):
    with raises_naming(FileNotFoundError, tmp_path / "cifar-10-batches-py" / "data_batch_1"):
        load_source(ImageDataConfig(source="cifar10"), tmp_path)


def test_cifar10_bad_checksum_names_the_file(tmp_path, no_network):
    fake_cifar(tmp_path)  # not the real batches: torchvision's md5 check fails
    with raises_naming(ValueError, tmp_path / "cifar-10-batches-py" / "data_batch_1", "md5"):
        load_source(ImageDataConfig(source="cifar10"), tmp_path)


def test_cifar10_loads_channels_first(tmp_path, monkeypatch, no_network):
    ref = fake_cifar(tmp_path)
    base = tmp_path / "cifar-10-batches-py"
    cls = torchvision.datasets.CIFAR10
    monkeypatch.setattr(
        cls, "train_list", [[f"data_batch_{i}", md5(base / f"data_batch_{i}")] for i in range(1, 6)]
    )
    monkeypatch.setattr(cls, "test_list", [["test_batch", md5(base / "test_batch")]])
    monkeypatch.setattr(cls, "meta", {**cls.meta, "md5": md5(base / "batches.meta")})
    raw = load_source(ImageDataConfig(source="cifar10", download=True), tmp_path)
    assert raw.class_names == tuple(f"c{i}" for i in range(10))
    assert raw.train.x.shape == (50, 3, 32, 32) and raw.test.x.shape == (10, 3, 32, 32)
    data, labels = ref["test_batch"]
    assert np.array_equal(raw.test.x, data.reshape(10, 3, 32, 32))
    assert raw.test.labels.tolist() == labels
    d = subset_images(ImageDataConfig(source="cifar10", split="halves", n_train=20), raw, seed=0)
    assert d.train.x.flags.c_contiguous and d.class_counts()["train"].tolist() == [2] * 10


# ---------------------------------------------------------------------------- npz


@pytest.mark.parametrize("shape", [(4, 5, 3), (4, 5, 1), (4, 5)])
def test_npz_loads_channels_first(tmp_path, shape):
    a = fake_arrays([3, 2], [1, 2], shape=shape)
    raw = load_source(npz_cfg(write_npz(tmp_path / "d.npz", a)), tmp_path)
    c = shape[2] if len(shape) == 3 else 1
    for split in ("train", "test"):
        x = a[f"x_{split}"].reshape(-1, 4, 5, c).transpose(0, 3, 1, 2)  # (N, C, H, W)
        s = getattr(raw, split)
        assert s.x.shape == x.shape and s.x.dtype == np.uint8
        assert np.array_equal(s.x, x) and np.array_equal(s.labels, a[f"y_{split}"])
    assert raw.class_names == ("0", "1")


def test_npz_relative_path_and_class_names(tmp_path):
    a = fake_arrays([2, 2, 2], [1, 1, 1])
    a["class_names"] = np.array(["ant", "bee", "cow"])
    (tmp_path / "sub").mkdir()
    write_npz(tmp_path / "sub" / "d.npz", a)
    raw = load_source(npz_cfg("sub/d.npz"), data_root=tmp_path)
    assert raw.location == str(tmp_path / "sub" / "d.npz")
    assert raw.class_names == ("ant", "bee", "cow")


def drop(key):
    return lambda a: a.pop(key)


def setitem(key, fn):
    return lambda a: a.__setitem__(key, fn(a[key]))


@pytest.mark.parametrize(
    "edit, message",
    [
        (drop("x_test"), r"missing key\(s\) \['x_test'\]"),
        (drop("y_train"), r"missing key\(s\) \['y_train'\]"),
        (setitem("x_train", lambda x: x.astype(np.float32)), "'x_train' has dtype float32"),
        (setitem("x_test", lambda x: x.transpose(0, 3, 1, 2)), "'x_test' has shape"),
        (setitem("x_train", lambda x: x[..., :2]), "'x_train' has shape"),
        (setitem("y_train", lambda y: y[:-1]), "'y_train' has 7 labels but 'x_train' 8"),
        (setitem("y_test", lambda y: y.astype(np.float64)), "'y_test' has shape .* dtype float64"),
        (setitem("y_test", lambda y: y.reshape(-1, 1)), "'y_test' has shape"),
        (setitem("y_train", lambda y: y - 1), "'y_train' has label -1"),
        (setitem("x_test", lambda x: x[:, :3]), "'x_train' images are .* 'x_test'"),
        (lambda a: a.__setitem__("class_names", np.array(["a"])), "'y_train' has label 1"),
        (lambda a: a.__setitem__("class_names", np.arange(2)), "'class_names' has shape"),
    ],
)
def test_npz_errors_name_the_key(tmp_path, edit, message):
    a = fake_arrays([4, 4], [2, 2])
    edit(a)
    path = write_npz(tmp_path / "d.npz", a)
    with pytest.raises(ValueError, match=re.escape(str(path)) + ".*" + message):
        load_source(npz_cfg(path), tmp_path)


def test_npz_missing_or_unreadable_file(tmp_path):
    with raises_naming(FileNotFoundError, tmp_path / "nope.npz"):
        load_source(npz_cfg("nope.npz"), tmp_path)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 definitely not a zip archive")
    with raises_naming(ValueError, bad, "not a readable .npz"):
        load_source(npz_cfg(bad), tmp_path)
    single = tmp_path / "single.npy"
    np.save(single, np.zeros(3))
    with raises_naming(ValueError, single, "single array"):
        load_source(npz_cfg(single), tmp_path)
    path = write_npz(tmp_path / "gray.npz", fake_arrays([2, 2], [2, 2], shape=(4, 5)))
    with raises_naming(ValueError, path, "1 channel(s), config says channels=3"):
        load_source(npz_cfg(path, channels=3), tmp_path)


# ---------------------------------------------------------------------------- imagefolder


def test_imagefolder_sorted_class_order_and_pixels(tmp_path):
    colours = fake_imagefolder(tmp_path / "f")
    cfg = ImageDataConfig(source="imagefolder", path="f")
    raw = load_source(cfg, tmp_path)
    assert raw.class_names == ("ant", "cat", "dog")  # sorted folder names = label order
    # rows interleave the classes (file i of every class, then file i + 1)
    assert raw.train.labels.tolist() == [0, 1, 2, 0, 1, 2, 0, 1, 2]
    assert [Path(f).name for f in raw.train.files[:4]] == ["00.png", "00.png", "00.png", "01.png"]
    d = subset_images(cfg, raw, seed=0)  # n = None: every image, decoded
    assert d.train.x.shape == (9, 3, 4, 5) and d.test.x.shape == (6, 3, 4, 5)  # PIL size (W, H)
    for split, s in (("train", d.train), ("test", d.test)):
        files = getattr(raw, split).files
        for row, i in enumerate(s.index):
            assert Path(files[i]).parent.name == raw.class_names[s.label[row]]
            assert (s.x[row] == np.array(colours[files[i]])[:, None, None]).all()


def test_round_robin_by_hand():
    labels = np.array([0, 0, 0, 1, 2, 2])
    assert round_robin(labels).tolist() == [0, 3, 4, 1, 5, 2]  # 0 1 2 | 0 2 | 0
    assert labels[round_robin(labels)].tolist() == [0, 1, 2, 0, 2, 0]


def test_imagefolder_subset_prefix_is_class_mixed(tmp_path):
    # the attack rule takes the first attack_points test images: they must not be one class
    fake_imagefolder(tmp_path / "f", per_class=(6, 4))
    d = make_image_data(ImageDataConfig(source="imagefolder", path="f", n_test=9), 0, tmp_path)
    assert sorted(d.test.label[:3].tolist()) == [0, 1, 2]


def test_imagefolder_grayscale(tmp_path):
    fake_imagefolder(tmp_path / "f")
    d = make_image_data(ImageDataConfig(source="imagefolder", path="f", channels=1), 0, tmp_path)
    assert d.train.x.shape == (9, 1, 4, 5)
    f = load_source(ImageDataConfig(source="imagefolder", path="f"), tmp_path).train.files[0]
    assert (d.train.x[0, 0] == np.asarray(Image.open(f).convert("L"))).all()


def test_imagefolder_decodes_only_the_chosen_files(tmp_path, monkeypatch):
    fake_imagefolder(tmp_path / "f", per_class=(6, 4))
    cfg = ImageDataConfig(source="imagefolder", path="f", n_train=6, n_test=3)
    opened = []
    real_open = Image.open

    def counting_open(fp, *args, **kwargs):
        opened.append(str(fp))
        return real_open(fp, *args, **kwargs)

    monkeypatch.setattr(Image, "open", counting_open)
    raw = load_source(cfg, tmp_path)
    assert opened == []  # listing the folder decodes nothing
    d = subset_images(cfg, raw, seed=3)
    chosen = [raw.train.files[i] for i in d.train.index] + [raw.test.files[i] for i in d.test.index]
    assert opened == chosen and len(opened) == 9


def test_imagefolder_unchosen_corrupt_file_is_not_touched(tmp_path):
    fake_imagefolder(tmp_path / "f", per_class=(6, 4))
    cfg = ImageDataConfig(source="imagefolder", path="f", n_train=6, n_test=3)
    before = make_image_data(cfg, 5, tmp_path)
    raw = load_source(cfg, tmp_path)
    unchosen = sorted(set(range(len(raw.train.files))) - set(before.train.index.tolist()))
    Path(raw.train.files[unchosen[0]]).write_bytes(b"not a png")
    after = make_image_data(cfg, 5, tmp_path)
    assert after.checksum == before.checksum


def test_imagefolder_corrupt_chosen_file_is_named(tmp_path):
    fake_imagefolder(tmp_path / "f")
    cfg = ImageDataConfig(source="imagefolder", path="f")
    bad = tmp_path / "f" / "test" / "cat" / "01.png"
    bad.write_bytes(bad.read_bytes()[:30])  # truncated PNG
    with raises_naming(ValueError, bad, "cannot decode"):
        make_image_data(cfg, 0, tmp_path)


def test_imagefolder_sizes_must_agree(tmp_path):
    fake_imagefolder(tmp_path / "f")
    cfg = ImageDataConfig(source="imagefolder", path="f")
    odd = tmp_path / "f" / "train" / "cat" / "02.png"
    Image.new("RGB", (6, 4)).save(odd)
    with raises_naming(ValueError, odd, "4x6", "expected 4x5"):
        make_image_data(cfg, 0, tmp_path)
    Image.new("RGB", (5, 4)).save(odd)
    odd = tmp_path / "f" / "test" / "ant" / "00.png"  # test images must match train's
    Image.new("RGB", (5, 5)).save(odd)
    with raises_naming(ValueError, odd, "5x5", "expected 4x5"):
        make_image_data(cfg, 0, tmp_path)


def test_imagefolder_layout_errors(tmp_path):
    cfg = ImageDataConfig(source="imagefolder", path="f")
    with raises_naming(FileNotFoundError, tmp_path / "f" / "train", "directory not found"):
        load_source(cfg, tmp_path)
    fake_imagefolder(tmp_path / "f")
    (tmp_path / "f" / "test" / "eel").mkdir()
    with raises_naming(FileNotFoundError, tmp_path / "f" / "test", "eel"):
        load_source(cfg, tmp_path)
    Image.new("RGB", (5, 4)).save(tmp_path / "f" / "test" / "eel" / "0.png")
    with raises_naming(ValueError, tmp_path / "f", "same class folders"):
        load_source(cfg, tmp_path)


def test_decode_images_empty_list():
    assert decode_images([], 3).shape == (0, 3, 0, 0)


# ---------------------------------------------------------------------------- splits


@pytest.fixture
def ten_class_npz(tmp_path):
    a = fake_arrays([6] * 10, [4] * 10, shape=(3, 3))
    return write_npz(tmp_path / "ten.npz", a), a


@pytest.mark.parametrize(
    "kw, classes, positive",
    [
        (dict(split="parity"), list(range(10)), [0, 2, 4, 6, 8]),
        (dict(split="halves"), list(range(10)), [0, 1, 2, 3, 4]),
        (dict(split="explicit", positive=(2,), negative=(7,)), [2, 7], [2]),
        (dict(split="explicit", positive=(7, 1), negative=(4,)), [1, 4, 7], [1, 7]),
    ],
)
def test_split_labels_are_consistent(ten_class_npz, kw, classes, positive):
    path, a = ten_class_npz
    d = make_image_data(npz_cfg(path, n_train=2 * len(classes), **kw), 0, path.parent)
    assert d.classes.tolist() == classes
    assert d.sign.tolist() == [1.0 if c in positive else -1.0 for c in classes]
    for split in (d.train, d.test):
        assert set(split.label.tolist()) == set(classes)  # only kept classes
        assert np.array_equal(d.classes[split.fine], split.label)
        assert np.array_equal(split.y, d.sign[split.fine]) and split.y.dtype == np.float32
        assert np.array_equal(split.y == 1, np.isin(split.label, positive))
        assert split.fine.dtype == split.label.dtype == split.index.dtype == np.int64
    src = a["x_train"][d.train.index][:, None]  # the images are the indexed source rows
    assert np.array_equal(d.train.x, src)
    assert np.array_equal(d.train.label, a["y_train"][d.train.index])
    assert d.class_counts()["train"].tolist() == [2] * len(classes)
    assert d.class_counts()["test"].tolist() == [4] * len(classes)  # n_test = None: all


@pytest.mark.parametrize(
    "sizes, n, expected",
    [
        ([5, 3, 2], 4, [2, 1, 1]),  # quotas 2.0, 1.2, 0.8 -> floors 2, 1, 0; .8 wins the unit
        ([50, 30, 20], 7, [4, 2, 1]),  # 3.5, 2.1, 1.4 -> 3, 2, 1; .5 wins
        ([6, 6, 6], 4, [2, 1, 1]),  # 4/3 each: tie goes to the lowest position
        ([1, 1, 98], 3, [0, 0, 3]),  # .03, .03, 2.94 -> proportional, not one per class
        ([4, 4, 4, 4], 8, [2, 2, 2, 2]),  # balanced and k | n: equal
        ([7, 0, 3], 10, [7, 0, 3]),  # n = N: everything
        ([7, 0, 3], 0, [0, 0, 0]),
    ],
)
def test_stratified_counts_hand_computed(sizes, n, expected):
    counts = stratified_counts(sizes, n)
    assert counts.tolist() == expected and counts.dtype == np.int64


def test_stratified_counts_rejects():
    with pytest.raises(ValueError, match=r"n must be in \[0, 10\].*11"):
        stratified_counts([5, 5], 11)
    with pytest.raises(ValueError, match="positive sum"):
        stratified_counts([0, 0], 0)


def test_unbalanced_source_gets_the_remainder_rule(tmp_path):
    path = write_npz(tmp_path / "u.npz", fake_arrays([5, 3, 2], [2, 2, 2], shape=(2, 2)))
    d = make_image_data(npz_cfg(path, n_train=4, n_test=3), 0, tmp_path)
    assert d.class_counts()["train"].tolist() == [2, 1, 1]
    assert d.class_counts()["test"].tolist() == [1, 1, 1]


def test_subsets_are_seeded_and_without_duplicates(ten_class_npz):
    path, _ = ten_class_npz
    cfg = npz_cfg(path, n_train=30, n_test=20)
    a, b, c = (make_image_data(cfg, s, path.parent) for s in (4, 4, 5))
    assert np.array_equal(a.train.index, b.train.index) and a.checksum == b.checksum
    assert not np.array_equal(a.train.index, c.train.index) and a.checksum != c.checksum
    for d in (a, c):
        for s in (d.train, d.test):
            assert len(np.unique(s.index)) == len(s.index)
            assert np.all(np.diff(s.index) > 0)  # stored sorted
    # the test subset does not depend on n_train, nor on the +1/-1 assignment
    other = npz_cfg(path, split="halves", n_train=50, n_test=20)
    assert np.array_equal(make_image_data(other, 4, path.parent).test.index, a.test.index)


def test_stratified_subset_grows_by_adding(ten_class_npz):
    _, a = ten_class_npz
    y = a["y_train"]
    small = stratified_subset(y, [2, 7], 4, seed=1, stream="train")
    large = stratified_subset(y, [2, 7], 8, seed=1, stream="train")
    assert set(small) <= set(large) and set(y[large]) == {2, 7}
    assert stratified_subset(y, [2, 7], None, seed=1, stream="train").tolist() == sorted(
        np.flatnonzero(np.isin(y, [2, 7]))
    )


def test_checksum_sees_one_pixel(ten_class_npz):
    path, a = ten_class_npz
    cfg = npz_cfg(path, n_train=20, n_test=10)
    d = make_image_data(cfg, 0, path.parent)
    i = d.train.index[3]
    a["x_train"][i, 1, 2] ^= 1  # one chosen pixel, one bit
    write_npz(path, a)
    e = make_image_data(cfg, 0, path.parent)
    assert np.array_equal(d.train.index, e.train.index) and e.checksum != d.checksum
    assert d.checksum == arrays_checksum(d.arrays()) and len(d.checksum) == 64


def test_subset_size_errors(ten_class_npz, tmp_path):
    path, _ = ten_class_npz
    cfg = npz_cfg(path, split="explicit", positive=(2,), negative=(7,), n_train=13)
    with pytest.raises(ValueError, match=r"n_train=13 exceeds the 12 train images .*\[2, 7\]"):
        make_image_data(cfg, 0, path.parent)
    with pytest.raises(ValueError, match="n_test=5 is below the 10 kept classes"):
        make_image_data(npz_cfg(path, n_test=5), 0, path.parent)
    gap = write_npz(tmp_path / "gap.npz", fake_arrays([2, 0, 2], [1, 1, 1], shape=(2, 2)))
    with raises_naming(ValueError, gap, "no train images of kept class(es) ['1 (1)']"):
        make_image_data(npz_cfg(gap), 0, tmp_path)


# ---------------------------------------------------------------------------- arrays


def test_arrays_round_trip_through_npz(ten_class_npz, tmp_path):
    path, _ = ten_class_npz
    cfg = npz_cfg(path, split="explicit", positive=(2, 4), negative=(7,), n_train=9, n_test=6)
    d = make_image_data(cfg, 0, path.parent)
    arrays = d.arrays()
    assert arrays["train_x"].dtype == np.uint8 and arrays["train_x"].shape == (9, 1, 3, 3)
    assert {k: v.dtype.str for k, v in arrays.items() if k.startswith("test_")} == {
        "test_x": "|u1",
        "test_fine": "<i8",
        "test_y": "<f4",
        "test_label": "<i8",
        "test_index": "<i8",
    }
    save_npz(tmp_path / "data.npz", **arrays)
    back = load_npz(tmp_path / "data.npz")
    assert arrays_checksum(back) == d.checksum  # recomputable from the file
    t = from_arrays(back)
    assert t.box == (0.0, 1.0) and t.k == 3 and t.input_shape == (1, 3, 3)
    assert t.class_names == ("2", "4", "7")
    assert t.train.x.dtype == torch.float32
    assert 0.0 <= t.train.x.min() and t.train.x.max() <= 1.0
    torch.testing.assert_close(t.train.x, torch.from_numpy(d.train.x).float() / 255, rtol=0, atol=0)
    assert t.test.y.dtype == torch.float32 and t.test.fine.dtype == torch.int64
    assert torch.equal(t.test.y, t.sign[t.test.fine])
    assert torch.equal(t.test.label, torch.from_numpy(d.test.label))
    assert torch.equal(t.train.index, torch.from_numpy(d.train.index))
    assert torch.equal(t.classes, torch.tensor([2, 4, 7]))


def test_from_arrays_rejects_inconsistent(ten_class_npz):
    path, _ = ten_class_npz
    arrays = make_image_data(npz_cfg(path, n_train=10, n_test=10), 0, path.parent).arrays()
    with pytest.raises(ValueError, match=r"lack key\(s\) \['test_index'\]"):
        from_arrays({k: v for k, v in arrays.items() if k != "test_index"})
    flipped = {**arrays, "train_y": -arrays["train_y"]}
    with pytest.raises(ValueError, match=r"'train_y' differs from sign\[train_fine\]"):
        from_arrays(flipped)
    floats = {**arrays, "test_x": arrays["test_x"] / 255.0}
    with pytest.raises(ValueError, match="'test_x' is float64"):
        from_arrays(floats)
    short = {**arrays, "test_label": arrays["test_label"][:-1]}
    with pytest.raises(ValueError, match=r"'test_label' has shape \(9,\), expected \(10,\)"):
        from_arrays(short)


def test_from_arrays_rejects_float_indices(ten_class_npz):
    path, _ = ten_class_npz
    arrays = make_image_data(npz_cfg(path, n_train=10, n_test=10), 0, path.parent).arrays()
    with pytest.raises(ValueError, match="'train_fine' has dtype float64, expected integers"):
        from_arrays({**arrays, "train_fine": arrays["train_fine"].astype(float)})
