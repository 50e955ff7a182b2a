-- Argo CD health of a Pakket Package or ClusterPackage (packages.pakket.dev).
--
-- Argo CD hands the object over as the global `obj` and reads back
-- {status, message}. Written for Argo CD's Lua (5.1) and tested with
-- lua5.4 (kubectl-instance/tests/argocd_health.rs). Package and
-- ClusterPackage share this script.
--
-- Pakket writes kstatus conditions on every object: Ready, Reconciling and
-- Stalled, with status.observedGeneration; they are read first. A package
-- written before them has Glasskube's Ready and Failed conditions.

-- kstatus: begin (the same in every Pakket health.lua; a test checks)
local function find(conditions, type)
  if conditions == nil then
    return nil
  end
  for _, condition in ipairs(conditions) do
    if condition.type == type then
      return condition
    end
  end
  return nil
end

-- "REASON: message", or whichever of the two is there.
local function said(condition)
  local reason = condition.reason or ""
  local message = condition.message or ""
  if reason ~= "" and message ~= "" then
    return reason .. ": " .. message
  end
  if message ~= "" then
    return message
  end
  return reason
end

-- A condition that waits; waiting for approval says so in those words
-- (the runtime's own "waiting for a person to approve: " lead is dropped
-- so it is not said twice).
local function waiting(condition)
  if condition.reason == "ApprovalPending" then
    local message = string.gsub(condition.message or "", "waiting for a person to approve: ", "")
    if message == "" then
      return "waiting for approval"
    end
    return "waiting for approval: " .. message
  end
  return said(condition)
end

-- A package or a request carries its Instance's Approved (and no
-- Unpacked): when that waits for approval, it is what holds the object.
local function mirrored_approval(conditions)
  local approved = find(conditions, "Approved")
  if approved ~= nil and approved.status ~= "True" and approved.reason == "ApprovalPending"
      and find(conditions, "Unpacked") == nil then
    return approved
  end
  return nil
end

local function kstatus(status, metadata)
  local conditions = status.conditions
  local stalled = find(conditions, "Stalled")
  local reconciling = find(conditions, "Reconciling")
  if stalled == nil and reconciling == nil then
    return nil
  end
  local generation = metadata.generation
  local observed = status.observedGeneration
  if generation ~= nil and observed ~= nil and observed < generation then
    return { status = "Progressing",
             message = string.format("generation %d not reconciled yet (status is of %d)", generation, observed) }
  end
  if stalled ~= nil and stalled.status == "True" then
    return { status = "Degraded", message = said(stalled) }
  end
  if reconciling ~= nil and reconciling.status == "True" then
    return { status = "Progressing", message = waiting(mirrored_approval(conditions) or reconciling) }
  end
  local ready = find(conditions, "Ready")
  if ready ~= nil and ready.status == "True" then
    return { status = "Healthy", message = said(ready) }
  end
  if ready ~= nil then
    return { status = "Progressing", message = said(ready) }
  end
  return { status = "Progressing", message = "not ready yet" }
end
-- kstatus: end

local function fallback(status)
  local failed = find(status.conditions, "Failed")
  if failed ~= nil and failed.status == "True" then
    return { status = "Degraded", message = said(failed) }
  end
  local ready = find(status.conditions, "Ready")
  if ready ~= nil and ready.status == "True" then
    return { status = "Healthy", message = said(ready) }
  end
  if ready ~= nil then
    return { status = "Progressing", message = waiting(mirrored_approval(status.conditions) or ready) }
  end
  return { status = "Progressing", message = "not reconciled: the package provisioner has written no status yet" }
end

local metadata = obj.metadata or {}
if metadata.deletionTimestamp ~= nil then
  return { status = "Progressing", message = "deleting: the package provisioner is uninstalling it" }
end
local status = obj.status
if status == nil then
  return { status = "Progressing", message = "not reconciled: the package provisioner has written no status yet" }
end
return kstatus(status, metadata) or fallback(status)
