-- Argo CD health of a Pakket Instance (core.pakket.dev).
--
-- Argo CD hands the object over as the global `obj` and reads back
-- {status, message}. Written for Argo CD's Lua (5.1) and tested with
-- lua5.4 (kubectl-instance/tests/argocd_health.rs).
--
-- Pakket writes kstatus conditions on every object: Ready (True only when
-- installed and healthy), Reconciling (True while work is under way or a
-- person must decide) and Stalled (True on a refusal or failure only a
-- person's change can move), with status.observedGeneration. They are read
-- first. An Instance written before them is read from Approved, Unpacked,
-- Installed and Healthy, the way `kubectl instance why` reads it.

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

-- Pakket's reasons that wait for a person's change, not for time.
local failures = {
  ApprovalDenied = true, UnpackFailed = true, InstallFailed = true,
  RolledBack = true, RenderFailed = true, InvalidConfig = true,
  DependenciesMissing = true, ObjectsUnhealthy = true,
  ProgressDeadlineExceeded = true, MixedRevisions = true,
}
local known = {
  ApprovedByPolicy = true, ApprovedByUser = true, ApprovalPending = true,
  UnpackPending = true, Unpacking = true, UnpackSucceeded = true,
  InstallPending = true, Installing = true, InstallSucceeded = true,
  HealthUnknown = true, ObjectsHealthy = true, ObjectsProgressing = true,
}

local function fallback(status)
  local conditions = status.conditions
  local order = { "Approved", "Unpacked", "Installed", "Healthy" }
  local unpacked = find(conditions, "Unpacked")
  local is_unpacked = unpacked ~= nil and unpacked.status == "True"
  -- The first failure holds it; else the first condition not True yet. An
  -- ApprovalPending before the content is unpacked is a placeholder.
  for _, type in ipairs(order) do
    local condition = find(conditions, type)
    if condition ~= nil and condition.status ~= "True" then
      if failures[condition.reason] or (not known[condition.reason] and condition.status == "False") then
        return { status = "Degraded", message = said(condition) }
      end
    end
  end
  for _, type in ipairs(order) do
    local condition = find(conditions, type)
    if condition == nil then
      return { status = "Progressing", message = type .. " not reported yet" }
    end
    if condition.status ~= "True" and not (type == "Approved" and not is_unpacked) then
      return { status = "Progressing", message = waiting(condition) }
    end
  end
  local approved = find(conditions, "Approved")
  if approved.status ~= "True" then
    return { status = "Progressing", message = waiting(approved) }
  end
  return { status = "Healthy", message = "installed and healthy" }
end

local metadata = obj.metadata or {}
if metadata.deletionTimestamp ~= nil then
  return { status = "Progressing", message = "deleting: the provisioner is uninstalling what the Instance installed" }
end
local status = obj.status
if status == nil or status.conditions == nil or #status.conditions == 0 then
  return { status = "Progressing", message = "not reconciled: no provisioner of class " .. tostring((obj.spec or {}).class) .. " has written a status yet" }
end
return kstatus(status, metadata) or fallback(status)
