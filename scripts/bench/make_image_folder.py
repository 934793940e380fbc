#!/usr/bin/python3
"""Makes an ImageNet-like folder for the data-loading benchmark: JPEGs of
about 500x375 (or 375x500), cut from the photographs Debian's scikit-image
package ships (python3-skimage) at varied crops, sizes and qualities, one
class (sub-folder) per photograph.

    make_image_folder.py OUT [--count 2000] [--seed 0]
"""
import argparse
import os
import random
import sys

from PIL import Image

PHOTOS = ["astronaut.png", "chelsea.png", "coffee.png", "hubble_deep_field.jpg", "ihc.png",
          "motorcycle_left.png", "motorcycle_right.png", "retina.jpg", "rocket.jpg"]
DATA_DIRS = ["/usr/lib/python3/dist-packages/skimage/data"]


def load_photos():
    photos = []
    for name in PHOTOS:
        for d in DATA_DIRS:
            path = os.path.join(d, name)
            if os.path.exists(path):
                photos.append((os.path.splitext(name)[0], Image.open(path).convert("RGB")))
                break
    if len(photos) < 2:
        sys.exit("make_image_folder: scikit-image's sample photographs are missing "
                 "(apt-get install python3-skimage)")
    return photos


def one_image(photo, rng):
    w, h = photo.size
    landscape = rng.random() < 0.75
    out_w, out_h = (500, 375) if landscape else (375, 500)
    jitter = rng.uniform(0.85, 1.15)
    out_w, out_h = int(out_w * jitter), int(out_h * jitter)
    # A window of the output's shape covering 35-100% of the photo's side.
    side = rng.uniform(0.35, 1.0)
    cw = min(w, int(w * side))
    ch = int(cw * out_h / out_w)
    if ch > h:
        ch = h
        cw = int(ch * out_w / out_h)
    x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
    im = photo.crop((x, y, x + cw, y + ch)).resize((out_w, out_h), Image.BILINEAR)
    if rng.random() < 0.5:
        im = im.transpose(Image.FLIP_LEFT_RIGHT)
    return im


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    photos = load_photos()
    for i in range(a.count):
        name, photo = photos[i % len(photos)]
        folder = os.path.join(a.out, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "%05d.jpg" % i)
        tmp = path + ".tmp"
        one_image(photo, rng).save(tmp, "JPEG", quality=rng.randint(70, 95))
        os.replace(tmp, path)
    print("make_image_folder: %d JPEGs in %d classes under %s" % (a.count, len(photos), a.out),
          file=sys.stderr)


if __name__ == "__main__":
    main()
