"""Python client of oomguard (oomguard.v1.Oomguard): will a Megatron-Core job
fit in GPU memory? See clients/python/README.md.

The generated protobuf/gRPC modules are imported from PYTHONPATH when there,
else generated once from proto/ into a cache directory (oomguard_client._stubs).
"""

from oomguard_client.client import (CheckResult, Client, EstimateResult, Gpu, OomguardError,
                                    RankEstimate, Recommendation, megatron_args)

__all__ = ["CheckResult", "Client", "EstimateResult", "Gpu", "OomguardError", "RankEstimate",
           "Recommendation", "megatron_args"]
