"""The float32 rational approximation of erf on ``[-4, 4]`` (the form XLA and Eigen use), shared by the array
GELU of :mod:`attnsym.models.forward` and the compiled one of :mod:`attnsym.models._fused`.

``erf(z) ≈ z · P(z²) / Q(z²)`` with the coefficients below, highest power first; beyond ``±4``
erf is ``±1`` to float32 precision, so ``z`` is clipped there.
"""

__all__ = ["ERF_P", "ERF_Q"]

ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
         -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
         -1.42647390514189e-02)
