; Chamberlain's Windows installer, for Inno Setup 6.3 or newer.
;
; NOT RUN HERE: written on Linux, where there is no Inno Setup; never compiled, never installed.
; The windows-latest job of .github/workflows/package.yml is its first compile.
;
; Built by packaging\windows\build.ps1, which passes:
;   /DAppVersion=0.1.0                 the version in pyproject.toml (required)
;   /DBundleDir=...\build\bundle\chamberlain   the PyInstaller one-folder bundle
;   /DIconFile=...\build\windows\chamberlain.ico
;
; What it does:
; - installs the bundle to {autopf}\Chamberlain: Program Files when installed for all users,
;   %LOCALAPPDATA%\Programs when for the current user only (the default; no administrator
;   needed); an upgrade replaces the old bundle whole, so no stale library is left behind;
; - a Start menu shortcut to chamberlainw.exe (the windowed executable: no console window);
;   chamberlain.exe beside it is the command line (`chamberlain ask ...`, `--version`);
; - an optional task, off by default: start at login, as a value "Chamberlain" under the
;   current user's HKCU\Software\Microsoft\Windows\CurrentVersion\Run. The app's own "Start at
;   login" setting (app/autostart.py) writes only an XDG autostart entry, which Windows ignores:
;   it has no Windows path yet, so this value is the only way, and the setting does not show it;
; - the uninstaller removes the program and that Run value, and keeps the user's data
;   (settings, encrypted memory, conversations, audit log: %LOCALAPPDATA%\chamberlain, which is
;   platformdirs.user_data_dir("chamberlain", appauthor=False), broker/settings.py) unless the
;   user ticks "Also delete my Chamberlain data". A silent uninstall always keeps it. The memory
;   key in Windows Credential Manager (service "chamberlain") is left either way.

#ifndef AppVersion
  #error Pass the version: ISCC /DAppVersion=X.Y.Z chamberlain.iss (build.ps1 does)
#endif
#ifndef BundleDir
  #define BundleDir "..\..\build\bundle\chamberlain"
#endif
#ifndef IconFile
  #define IconFile "..\..\build\windows\chamberlain.ico"
#endif
#define AppExe "chamberlainw.exe"
#define RunKey "Software\Microsoft\Windows\CurrentVersion\Run"

[Setup]
; The AppId ties upgrades and the uninstaller together: never change it.
AppId={{FBCE3D5E-AD9F-4AD0-945D-1BE52DB77EDC}
AppName=Chamberlain
AppVersion={#AppVersion}
AppVerName=Chamberlain {#AppVersion}
AppPublisher=Chamberlain
AppComments=A local desktop assistant that asks before it acts
DefaultDirName={autopf}\Chamberlain
DefaultGroupName=Chamberlain
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog commandline
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0
OutputBaseFilename=chamberlain-{#AppVersion}-setup
SetupIconFile={#IconFile}
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName=Chamberlain
WizardStyle=modern
Compression=lzma2
SolidCompression=yes
; A running Chamberlain holds its files open: offer to close it before files are replaced.
CloseApplications=yes
RestartApplications=no

[Tasks]
Name: "startatlogin"; Description: "Start Chamberlain when I log in"; GroupDescription: "Start-up:"; Flags: unchecked

[InstallDelete]
; The previous version's libraries: the new bundle replaces them whole.
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "{#BundleDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Chamberlain"; Filename: "{app}\{#AppExe}"; Comment: "A local desktop assistant that asks before it acts"

[Registry]
Root: HKCU; Subkey: "{#RunKey}"; ValueType: string; ValueName: "Chamberlain"; ValueData: """{app}\{#AppExe}"""; Tasks: startatlogin; Flags: uninsdeletevalue

[Run]
Filename: "{app}\{#AppExe}"; Description: "Start Chamberlain now"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
Type: dirifempty; Name: "{app}"

[Code]
var
  DeleteUserData: Boolean;

function UserDataDir(): String;
begin
  { platformdirs.user_data_dir("chamberlain", appauthor=False) on Windows }
  Result := ExpandConstant('{localappdata}\chamberlain');
end;

{ The uninstaller has no wizard pages: ask with a small form holding one box, unticked.
  False when the user cancels the uninstall; Wanted says whether the box was ticked. }
function AskToDeleteUserData(var Wanted: Boolean): Boolean;
var
  Form: TSetupForm;
  Note: TNewStaticText;
  Box: TNewCheckBox;
  OkButton, CancelButton: TNewButton;
begin
  Result := False;
  Wanted := False;
#if Ver < EncodeVer(6, 6, 0)
  Form := CreateCustomForm();
  Form.ClientWidth := ScaleX(440);
  Form.ClientHeight := ScaleY(150);
#else
  Form := CreateCustomForm(440, 150, False, False);
#endif
  try
    Form.Caption := 'Uninstall Chamberlain';

    Note := TNewStaticText.Create(Form);
    Note.Parent := Form;
    Note.Left := ScaleX(16);
    Note.Top := ScaleY(16);
    Note.Width := Form.ClientWidth - ScaleX(32);
    Note.AutoSize := False;
    Note.WordWrap := True;
    Note.Height := ScaleY(48);
    Note.Caption := 'Chamberlain will be removed. Your settings, memory, conversations and ' +
      'audit log stay in ' + UserDataDir() + ' unless you tick the box.';

    Box := TNewCheckBox.Create(Form);
    Box.Parent := Form;
    Box.Left := ScaleX(16);
    Box.Top := ScaleY(72);
    Box.Width := Form.ClientWidth - ScaleX(32);
    Box.Height := ScaleY(20);
    Box.Caption := 'Also &delete my Chamberlain data (this cannot be undone)';
    Box.Checked := False;

    OkButton := TNewButton.Create(Form);
    OkButton.Parent := Form;
    OkButton.Width := ScaleX(88);
    OkButton.Height := ScaleY(26);
    OkButton.Left := Form.ClientWidth - ScaleX(16 + 88 + 8 + 88);
    OkButton.Top := Form.ClientHeight - ScaleY(26 + 14);
    OkButton.Caption := 'Uninstall';
    OkButton.ModalResult := mrOk;
    OkButton.Default := True;

    CancelButton := TNewButton.Create(Form);
    CancelButton.Parent := Form;
    CancelButton.Width := ScaleX(88);
    CancelButton.Height := ScaleY(26);
    CancelButton.Left := Form.ClientWidth - ScaleX(16 + 88);
    CancelButton.Top := Form.ClientHeight - ScaleY(26 + 14);
    CancelButton.Caption := 'Cancel';
    CancelButton.ModalResult := mrCancel;
    CancelButton.Cancel := True;

    Form.ActiveControl := OkButton;
    Result := Form.ShowModal() = mrOk;
    Wanted := Result and Box.Checked;
  finally
    Form.Free();
  end;
end;

function InitializeUninstall(): Boolean;
begin
  Result := True;
  DeleteUserData := False;
  if (not UninstallSilent()) and DirExists(UserDataDir()) then
    Result := AskToDeleteUserData(DeleteUserData);  { False: cancelled, nothing is removed }
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
var
  Value: String;
begin
  if CurUninstallStep <> usPostUninstall then
    Exit;
  { A Run value pointing into this installation, even one written by hand or by a later app
    version, would start a program that is gone. }
  if RegQueryStringValue(HKCU, '{#RunKey}', 'Chamberlain', Value) and
     (Pos(Lowercase(ExpandConstant('{app}')), Lowercase(Value)) > 0) then
    RegDeleteValue(HKCU, '{#RunKey}', 'Chamberlain');
  if DeleteUserData and not DelTree(UserDataDir(), True, True, True) then
    MsgBox('Some of your Chamberlain data could not be deleted (is Chamberlain still running?). ' +
      'Delete the folder ' + UserDataDir() + ' by hand.', mbError, MB_OK);
end;
