"""A local stand-in for Azure Resource Manager, driven by the real azure-mgmt-* clients in tests."""

from tests.support.arm_standin.faults import Fault
from tests.support.arm_standin.server import ArmStandIn

__all__ = ["ArmStandIn", "Fault"]
