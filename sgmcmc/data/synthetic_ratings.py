"""Synthetic ratings in MovieLens-1M's ``ratings.dat`` format, drawn from the BPMF model with known factors (issue 19,
SPEC T12), so that the BPMF target, its tests and a smoke version of ``make sghmc-bpmf`` run without the real file,
which may not be redistributed.

The model, on SPEC T12's scale y = (r − 1)/4 (r the 1–5 rating):

    y_ui = base + a_u + b_i + U_u · V_i + ε,   ε ~ N(0, noise_sd²),
    U_u ~ N(0, factor_sd² I_k), V_i ~ N(0, factor_sd² I_k), a_u ~ N(0, bias_sd²), b_i ~ N(0, bias_sd²),

and the written rating is r = 1 + 4·y rounded to the nearest of 1, …, 5 (clipped). Which (user, item) pairs are
rated: every user rates at least ``min_per_user`` items (MovieLens-1M's users rate at least 20), items are drawn with
Zipf-like popularity (weight ∝ 1/rank), no pair twice.

The noise floor: no predictor of r from (u, i) beats E[r | u, i] in squared error, and under the model that is
Σ_k k·P(round(1 + 4y) = k) with y ~ N(mean_ui, noise_sd²); :func:`noise_floor_rmse` gives the RMSE of that
predictor over the drawn ratings (the bar a sampler's RMSE on held-out ratings is compared with).

    python -m sgmcmc.data.synthetic_ratings --size full --out FILE    # then target.ratings_file=FILE
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

# SPEC T12: the global base on the (r − 1)/4 scale
BASE = 0.645391
SIZES = {  # (users, items, ratings): MovieLens-1M's counts at "full"
    "full": (6040, 3706, 1_000_209),
    "small": (200, 150, 6_000),
}


@dataclass(frozen=True)
class Ratings:
    """Drawn ratings (1-based ids as in ratings.dat) and the model's mean y of every rated pair."""
    users: np.ndarray    # (m,) int, 1..n_users
    items: np.ndarray    # (m,) int, 1..n_items
    ratings: np.ndarray  # (m,) int, 1..5
    mean: np.ndarray     # (m,) float, base + a_u + b_i + U_u·V_i
    noise_sd: float


def draw_pairs(n_users: int, n_items: int, n_ratings: int, min_per_user: int, rng: np.random.Generator):
    """(users, items), 0-based, each user with at least ``min_per_user`` distinct items, ~n_ratings pairs in all."""
    if min_per_user > n_items or n_users * min_per_user > n_ratings:
        raise ValueError(f"cannot draw {n_ratings} ratings with {min_per_user} per user for {n_users} users and {n_items} items")
    popularity = 1.0 / np.arange(1, n_items + 1)
    popularity = popularity[rng.permutation(n_items)]
    popularity /= popularity.sum()
    extra = rng.multinomial(n_ratings - n_users * min_per_user, np.full(n_users, 1.0 / n_users))
    counts = np.minimum(min_per_user + extra, n_items)
    users, items = [], []
    for user, count in enumerate(counts):  # one draw per user (n_users ≤ 6,040 calls at full size)
        chosen = rng.choice(n_items, size=count, replace=False, p=popularity)
        users.append(np.full(count, user))
        items.append(chosen)
    return np.concatenate(users), np.concatenate(items)


def draw_ratings(n_users: int, n_items: int, n_ratings: int, latent_dim: int = 20, factor_sd: float = 0.1,
                 bias_sd: float = 0.05, noise_sd: float = 0.2, min_per_user: int = 20, seed: int = 0) -> Ratings:
    """Draw the factors, the rated pairs and the ratings (module docstring)."""
    rng = np.random.default_rng(seed)
    user_factors = factor_sd * rng.standard_normal((n_users, latent_dim))
    item_factors = factor_sd * rng.standard_normal((n_items, latent_dim))
    user_bias = bias_sd * rng.standard_normal(n_users)
    item_bias = bias_sd * rng.standard_normal(n_items)
    users, items = draw_pairs(n_users, n_items, n_ratings, min(min_per_user, n_items), rng)
    mean = BASE + user_bias[users] + item_bias[items] + np.einsum("mk,mk->m", user_factors[users], item_factors[items])
    y = mean + noise_sd * rng.standard_normal(mean.shape)
    ratings = np.clip(np.rint(1.0 + 4.0 * y), 1, 5).astype(int)
    return Ratings(users + 1, items + 1, ratings, mean, float(noise_sd))


def expected_rating(mean: np.ndarray, noise_sd: float) -> np.ndarray:
    """E[r | u, i] = Σ_k k·P(round(1 + 4y) = k, clipped to 1..5), y ~ N(mean, noise_sd²)."""
    edges = (np.array([1.5, 2.5, 3.5, 4.5]) - 1.0) / 4.0  # y-values where the rounded rating steps up
    below = stats.norm.cdf((edges[None, :] - mean[:, None]) / noise_sd)  # P(y < edge), (m, 4)
    probabilities = np.diff(np.concatenate([np.zeros((len(mean), 1)), below, np.ones((len(mean), 1))], axis=1), axis=1)
    return probabilities @ np.arange(1, 6)


def noise_floor_rmse(drawn: Ratings) -> float:
    """RMSE (1–5 scale) of the best predictor E[r | u, i] over the drawn ratings."""
    return float(np.sqrt(np.mean((expected_rating(drawn.mean, drawn.noise_sd) - drawn.ratings) ** 2)))


def write_ratings_dat(drawn: Ratings, path: Path) -> None:
    """``UserID::MovieID::Rating::Timestamp`` lines (timestamps 0), MovieLens-1M's ratings.dat format."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (f"{u}::{i}::{r}::0\n" for u, i, r in zip(drawn.users.tolist(), drawn.items.tolist(), drawn.ratings.tolist()))
    path.write_text("".join(lines))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="the ratings.dat file to write")
    args = parser.parse_args(argv)
    n_users, n_items, n_ratings = SIZES[args.size]
    drawn = draw_ratings(n_users, n_items, n_ratings, seed=args.seed)
    write_ratings_dat(drawn, args.out)
    print(f"{args.out}: {len(drawn.ratings)} ratings, {n_users} users x {n_items} items; "
          f"noise-floor RMSE {noise_floor_rmse(drawn):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
