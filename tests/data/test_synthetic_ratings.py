"""sgmcmc.data.synthetic_ratings: the BPMF model's ratings in ratings.dat format and the noise floor it implies."""

import numpy as np

from sgmcmc.data.synthetic_ratings import draw_ratings, expected_rating, noise_floor_rmse, write_ratings_dat


def test_expected_rating_matches_monte_carlo_of_the_rounded_clipped_rating():
    rng = np.random.default_rng(1)
    means = np.array([-0.2, 0.1, 0.4, 0.645391, 0.9, 1.3])
    noise_sd = 0.2
    draws = np.clip(np.rint(1 + 4 * (means[:, None] + noise_sd * rng.standard_normal((6, 400_000)))), 1, 5)
    # Monte Carlo standard error of each mean rating: sd(r) / sqrt(400,000) < 0.002
    assert np.allclose(expected_rating(means, noise_sd), draws.mean(axis=1), atol=0.01)


def test_drawn_file_reads_back_with_every_user_rating_at_least_twenty_items(tmp_path):
    drawn = draw_ratings(50, 40, 1500, latent_dim=3, seed=2)
    path = tmp_path / "ratings.dat"
    write_ratings_dat(drawn, path)
    rows = np.array([[int(field) for field in line.split("::")] for line in path.read_text().splitlines()])
    assert rows.shape == (len(drawn.ratings), 4)
    assert np.array_equal(rows[:, 0], drawn.users) and np.array_equal(rows[:, 1], drawn.items)
    assert set(rows[:, 2]) <= {1, 2, 3, 4, 5}
    assert np.bincount(rows[:, 0])[1:].min() >= 20
    assert len({(u, i) for u, i in rows[:, :2].tolist()}) == len(rows)  # no pair twice


def test_noise_floor_sits_between_zero_noise_and_the_rating_spread():
    drawn = draw_ratings(100, 80, 4000, seed=3)
    floor = noise_floor_rmse(drawn)
    # the best predictor beats predicting every rating by the overall mean, and cannot reach 0 with noise_sd 0.2
    assert 0.3 < floor < float(np.std(drawn.ratings))
