"""Python client of oomguard (oomguard.v1.Oomguard): will a Megatron-Core job
fit in GPU memory? See clients/python/README.md. oomguard_client.rl: the
pre-flight of an RL post-training job from its framework's config.

The generated protobuf/gRPC modules (oomguard.v1) come with the installed
package (`pip install ./clients/python`); in a checkout they are imported
from PYTHONPATH when there, else generated once from proto/ into a cache
directory (oomguard_client._stubs).
"""

from oomguard_client.client import (Alternative, CheckResult, Client, EstimateResult,
                                    FieldViolation, Gpu, OomguardError, RankEstimate,
                                    Recommendation, ReportResult, UnmodelledSetting,
                                    megatron_args)
from oomguard_client import rl

__all__ = ["Alternative", "CheckResult", "Client", "EstimateResult", "FieldViolation", "Gpu",
           "OomguardError", "RankEstimate", "Recommendation", "ReportResult", "UnmodelledSetting",
           "megatron_args", "rl"]
