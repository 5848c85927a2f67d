"""Writes input_ids.npy and attention_mask.npy (int64, batch 1) for the ids given."""
import sys

import numpy as np

out, ids = sys.argv[1], [int(t) for t in sys.argv[2:]]
np.save(f"{out}/input_ids.npy", np.array([ids], dtype=np.int64))
np.save(f"{out}/attention_mask.npy", np.ones((1, len(ids)), dtype=np.int64))
