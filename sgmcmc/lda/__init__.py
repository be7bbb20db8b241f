"""Online LDA in the expanded-mean parameterisation (SPEC §2 T10; Patterson & Teh 2013).

- :mod:`sgmcmc.lda.gibbs`: CSR packing of documents and the per-document collapsed Gibbs sampler of the topic
  indicators with φ fixed (averaged counts B̄, Ā).
- :mod:`sgmcmc.lda.gradient`: ∇_θ log p(θ | minibatch) and the SGRLD drift G⁻¹∇log p + Γ.
- :mod:`sgmcmc.lda.perplexity`: held-out perplexity with a running average of the predictive (SPEC §3 E3).
"""

from sgmcmc.lda.gibbs import pack, topic_counts
from sgmcmc.lda.gradient import log_posterior_gradient, riemannian_drift
from sgmcmc.lda.perplexity import HeldOutPerplexity

__all__ = ["pack", "topic_counts", "log_posterior_gradient", "riemannian_drift", "HeldOutPerplexity"]
