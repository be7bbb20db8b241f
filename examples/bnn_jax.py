"""The SGHMC paper's Bayesian neural network (Chen, Fox & Guestrin 2014 §4.2) in jax.numpy, in blackjax's form: the
784–100–10 sigmoid network of sgmcmc/targets/bnn.py (``target=bnn_mnist``, its backward pass written by hand), here
its log-likelihood of one image and its log prior, and nothing else; JAX forms the gradients (sgmcmc/targets/jax_model.py).

The prior is N(0, λ⁻¹ I) with λ = 1 on every weight and bias: ``target=bnn_mnist target.gibbs_every=0`` (the precisions
kept at their start; a model in blackjax's form has no Gibbs step for them). The images, the split and the scaling are
bnn_mnist's (its loader, from the data folder); θ₀ is N(0, 0.01²) weights and zero biases, drawn with ``seed``.

    python run.py target=custom target.model=examples/bnn_jax.py:BayesianNeuralNetwork target.batch_size=500 \\
        sampler=sghmc sampler.step_size=1.41421e-3 sampler.friction=7.07107 sampler.noise_estimate=zero tune=off \\
        run.n_steps=2000 run.burn_in=1000 run.thin=100
"""

import jax
import jax.numpy as jnp
import numpy as np

from sgmcmc.targets.bnn import bnn_mnist


class BayesianNeuralNetwork:
    def __init__(self, data_dir=None, n_hidden: int = 100, max_train=None, max_test=None, seed: int = 0):
        images = bnn_mnist(data_dir, n_hidden=n_hidden, max_train=max_train, max_test=max_test)
        self.data = (images.features, images.labels)  # x_i = (pixels / 256, its digit)
        rng = np.random.default_rng(seed)
        self.initial_position = (0.01 * rng.standard_normal((784, n_hidden)), np.zeros(n_hidden),
                                 0.01 * rng.standard_normal((n_hidden, 10)), np.zeros(10))  # (W1, b1, W2, b2)

    @staticmethod
    def loglikelihood_fn(params, example):
        w1, b1, w2, b2 = params
        pixels, digit = example
        scores = jax.nn.sigmoid(pixels @ w1 + b1) @ w2 + b2
        return scores[digit] - jax.scipy.special.logsumexp(scores)

    @staticmethod
    def logprior_fn(params):
        return -0.5 * sum(jnp.sum(leaf**2) for leaf in jax.tree_util.tree_leaves(params))
